CREATE TABLE "identity_challenges" (
	"id" uuid PRIMARY KEY NOT NULL,
	"client_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"status" text NOT NULL,
	"questions" jsonb NOT NULL,
	"answer_key" jsonb NOT NULL,
	"failed_attempts" integer DEFAULT 0 NOT NULL,
	"failure_reason" text,
	"expires_at" timestamp with time zone NOT NULL,
	"passed_at" timestamp with time zone,
	"failed_at" timestamp with time zone,
	"token_hash" text,
	"token_expires_at" timestamp with time zone,
	"token_used_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "identity_submissions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"client_id" uuid NOT NULL,
	"challenge_id" uuid NOT NULL,
	"passed" boolean NOT NULL,
	"failure_reason" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "profile_updates" (
	"id" uuid PRIMARY KEY NOT NULL,
	"client_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"challenge_id" uuid NOT NULL,
	"phone_number" text NOT NULL,
	"email" text,
	"previous_phone_number" text NOT NULL,
	"previous_email" text,
	"applied_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "sessions_revoked_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "identity_challenges" ADD CONSTRAINT "identity_challenges_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "identity_challenges" ADD CONSTRAINT "identity_challenges_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "identity_submissions" ADD CONSTRAINT "identity_submissions_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "identity_submissions" ADD CONSTRAINT "identity_submissions_challenge_id_identity_challenges_id_fk" FOREIGN KEY ("challenge_id") REFERENCES "public"."identity_challenges"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "profile_updates" ADD CONSTRAINT "profile_updates_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "profile_updates" ADD CONSTRAINT "profile_updates_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "profile_updates" ADD CONSTRAINT "profile_updates_challenge_id_identity_challenges_id_fk" FOREIGN KEY ("challenge_id") REFERENCES "public"."identity_challenges"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "identity_challenges_user_idx" ON "identity_challenges" USING btree ("client_id","user_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "identity_challenges_token_uq" ON "identity_challenges" USING btree ("token_hash");--> statement-breakpoint
CREATE INDEX "identity_submissions_challenge_idx" ON "identity_submissions" USING btree ("challenge_id");--> statement-breakpoint
CREATE INDEX "profile_updates_user_idx" ON "profile_updates" USING btree ("client_id","user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "profile_updates_challenge_uq" ON "profile_updates" USING btree ("challenge_id");