-- Rows from before outcomes were stored with their key (an in-flight marker without a response) have nothing to replay.
DELETE FROM "idempotency_keys" WHERE "status_code" IS NULL OR "response_body" IS NULL;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ALTER COLUMN "status_code" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ALTER COLUMN "response_body" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "idempotency_keys" DROP COLUMN "state";--> statement-breakpoint
ALTER TABLE "idempotency_keys" DROP COLUMN "owner";--> statement-breakpoint
ALTER TABLE "idempotency_keys" DROP COLUMN "locked_until";