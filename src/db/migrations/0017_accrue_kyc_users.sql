CREATE TABLE "kyc_document_links" (
	"id" uuid PRIMARY KEY NOT NULL,
	"client_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"application_id" uuid NOT NULL,
	"redirect_url" text NOT NULL,
	"url" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
DROP INDEX "kyc_applications_due_idx";--> statement-breakpoint
ALTER TABLE "profile_updates" ALTER COLUMN "phone_number" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "profile_updates" ALTER COLUMN "previous_phone_number" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "users" ALTER COLUMN "phone_number" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "kyc_applications" ADD COLUMN "phone" text;--> statement-breakpoint
ALTER TABLE "kyc_applications" ADD COLUMN "ip_address" text;--> statement-breakpoint
ALTER TABLE "kyc_applications" ADD COLUMN "documents_submitted_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "kyc_applications" ADD COLUMN "documents_sent_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "kyc_document_links" ADD CONSTRAINT "kyc_document_links_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "kyc_document_links" ADD CONSTRAINT "kyc_document_links_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "kyc_document_links" ADD CONSTRAINT "kyc_document_links_application_id_kyc_applications_id_fk" FOREIGN KEY ("application_id") REFERENCES "public"."kyc_applications"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "kyc_document_links_user_idx" ON "kyc_document_links" USING btree ("client_id","user_id","created_at");--> statement-breakpoint
CREATE INDEX "kyc_applications_due_idx" ON "kyc_applications" USING btree ("decide_after") WHERE status in ('Pending', 'ManualReview');--> statement-breakpoint
-- Hand-written: KYC statuses in Accrue's vocabulary. DisclosuresAccepted is NotStarted with disclosures_accepted_at set; Declined is Denied.
UPDATE "users" SET "kyc_status" = 'NotStarted' WHERE "kyc_status" = 'DisclosuresAccepted';--> statement-breakpoint
UPDATE "users" SET "kyc_status" = 'Denied' WHERE "kyc_status" = 'Declined';--> statement-breakpoint
UPDATE "kyc_applications" SET "status" = 'Denied' WHERE "status" = 'Declined';
