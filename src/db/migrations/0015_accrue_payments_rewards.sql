CREATE TABLE "card_authorizations" (
	"id" uuid PRIMARY KEY NOT NULL,
	"client_id" uuid NOT NULL,
	"payment_id" uuid NOT NULL,
	"status" text NOT NULL,
	"amount" bigint NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "card_captures" (
	"id" uuid PRIMARY KEY NOT NULL,
	"client_id" uuid NOT NULL,
	"payment_id" uuid NOT NULL,
	"authorization_id" uuid,
	"amount" bigint NOT NULL,
	"success" boolean NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "rewards" ALTER COLUMN "wallet_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "rewards" ADD COLUMN "kind" text DEFAULT 'immediate' NOT NULL;--> statement-breakpoint
ALTER TABLE "rewards" ADD COLUMN "status" text DEFAULT 'Credited' NOT NULL;--> statement-breakpoint
ALTER TABLE "rewards" ADD COLUMN "phone_number" text;--> statement-breakpoint
ALTER TABLE "rewards" ADD COLUMN "reason_code" text;--> statement-breakpoint
ALTER TABLE "rewards" ADD COLUMN "cost_center" text;--> statement-breakpoint
ALTER TABLE "rewards" ADD COLUMN "notification_email" text;--> statement-breakpoint
ALTER TABLE "rewards" ADD COLUMN "claim_expires_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "rewards" ADD COLUMN "credited_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "rewards" ADD COLUMN "cancelled_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "rewards" ADD COLUMN "reversed_amount" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "rewards" ADD COLUMN "updated_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
-- Hand-written: rewards issued before this migration were credited when created.
UPDATE "rewards" SET "credited_at" = "created_at", "updated_at" = "created_at";--> statement-breakpoint
ALTER TABLE "card_authorizations" ADD CONSTRAINT "card_authorizations_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "card_authorizations" ADD CONSTRAINT "card_authorizations_payment_id_payments_id_fk" FOREIGN KEY ("payment_id") REFERENCES "public"."payments"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "card_captures" ADD CONSTRAINT "card_captures_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "card_captures" ADD CONSTRAINT "card_captures_payment_id_payments_id_fk" FOREIGN KEY ("payment_id") REFERENCES "public"."payments"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "card_captures" ADD CONSTRAINT "card_captures_authorization_id_card_authorizations_id_fk" FOREIGN KEY ("authorization_id") REFERENCES "public"."card_authorizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "card_authorizations_payment_idx" ON "card_authorizations" USING btree ("payment_id","created_at","id");--> statement-breakpoint
CREATE INDEX "card_captures_payment_idx" ON "card_captures" USING btree ("payment_id","created_at","id");--> statement-breakpoint
CREATE INDEX "rewards_client_idx" ON "rewards" USING btree ("client_id","created_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "rewards_pre_issued_phone_uq" ON "rewards" USING btree ("client_id","phone_number") WHERE status = 'Created';--> statement-breakpoint
CREATE INDEX "rewards_claim_expiring_idx" ON "rewards" USING btree ("claim_expires_at") WHERE status = 'Created';