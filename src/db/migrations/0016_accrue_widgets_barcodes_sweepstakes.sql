CREATE TABLE "sweepstakes_results" (
	"id" uuid PRIMARY KEY NOT NULL,
	"client_id" uuid NOT NULL,
	"sweepstakes_id" text NOT NULL,
	"user_id" uuid NOT NULL,
	"customer_id_type" text NOT NULL,
	"customer_id" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "wallet_barcodes" ALTER COLUMN "usage_limit" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "wallet_barcodes" ADD COLUMN "updated_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
-- Hand-written: existing barcodes were last changed when made, as far as anyone knows.
UPDATE "wallet_barcodes" SET "updated_at" = "created_at";--> statement-breakpoint
ALTER TABLE "sweepstakes_results" ADD CONSTRAINT "sweepstakes_results_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sweepstakes_results" ADD CONSTRAINT "sweepstakes_results_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "sweepstakes_results_uq" ON "sweepstakes_results" USING btree ("client_id","sweepstakes_id","user_id");