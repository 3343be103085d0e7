CREATE TABLE "bank_transfers" (
	"reference" text PRIMARY KEY NOT NULL,
	"client_id" uuid NOT NULL,
	"purpose" text NOT NULL,
	"subject_id" uuid NOT NULL,
	"direction" text NOT NULL,
	"amount" bigint NOT NULL,
	"provider_ref" text NOT NULL,
	"status" text NOT NULL,
	"failure_reason" text,
	"check_after" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "kyc_applications" ADD COLUMN "sent_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "bank_transfers" ADD CONSTRAINT "bank_transfers_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "bank_transfers_due_idx" ON "bank_transfers" USING btree ("check_after") WHERE status = 'Pending';--> statement-breakpoint
CREATE INDEX "bank_transfers_subject_idx" ON "bank_transfers" USING btree ("subject_id");