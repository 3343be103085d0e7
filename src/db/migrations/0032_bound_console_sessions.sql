-- A console session is bound to what it signed in with: a merchant's to its secret (deleted with
-- it), an operator's to ADMIN_TOKEN (an HMAC of it). A session without either cannot be checked,
-- so the existing ones end: everyone signs in again once.
DELETE FROM "console_sessions";--> statement-breakpoint
ALTER TABLE "console_sessions" ADD COLUMN "secret_id" uuid;--> statement-breakpoint
ALTER TABLE "console_sessions" ADD COLUMN "admin_token_mac" "bytea";--> statement-breakpoint
ALTER TABLE "console_sessions" ADD CONSTRAINT "console_sessions_secret_id_client_secrets_id_fk" FOREIGN KEY ("secret_id") REFERENCES "public"."client_secrets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "console_sessions_client_idx" ON "console_sessions" USING btree ("client_id");--> statement-breakpoint
CREATE INDEX "console_sessions_secret_idx" ON "console_sessions" USING btree ("secret_id");--> statement-breakpoint
ALTER TABLE "console_sessions" ADD CONSTRAINT "console_sessions_bound" CHECK (("console_sessions"."role" = 'merchant' and "console_sessions"."client_id" is not null and "console_sessions"."secret_id" is not null) or ("console_sessions"."role" = 'operator' and "console_sessions"."admin_token_mac" is not null));
