CREATE TABLE "console_payment_rollup" (
	"client_id" uuid NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	"payments" bigint NOT NULL,
	"failed" bigint NOT NULL,
	"amount" bigint NOT NULL,
	"captured" bigint NOT NULL,
	"refunded" bigint NOT NULL,
	CONSTRAINT "console_payment_rollup_client_id_hour_pk" PRIMARY KEY("client_id","hour")
);
--> statement-breakpoint
CREATE TABLE "console_payment_rollup_deltas" (
	"client_id" uuid NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	"payments" bigint NOT NULL,
	"failed" bigint NOT NULL,
	"amount" bigint NOT NULL,
	"captured" bigint NOT NULL,
	"refunded" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "event_deliveries_client_failed_idx" ON "event_deliveries" USING btree ("client_id","event_id") WHERE state = 'failed';--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "payment_intents_client_status_idx" ON "payment_intents" USING btree ("client_id","status","created_at","id");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "payment_intents_client_method_idx" ON "payment_intents" USING btree ("client_id","payment_method","created_at","id");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "payments_status_idx" ON "payments" USING btree ("client_id","status","created_at","id");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "payments_reference_idx" ON "payments" USING btree ("client_id","reference","created_at","id") WHERE reference is not null;--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "payments_client_channel_idx" ON "payments" USING btree ("client_id","channel","created_at","id") WHERE channel is not null;--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "request_log_client_class_idx" ON "request_log" USING btree ("client_id",("status" / 100),"created_at","id");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "request_log_client_path_idx" ON "request_log" USING btree ("client_id","path" text_pattern_ops);--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "request_log_client_method_idx" ON "request_log" USING btree ("client_id","method","created_at","id");--> statement-breakpoint
-- What a statement on payments changed, per merchant and UTC hour of creation, appended to the
-- deltas (docs/internals.md#counters): an insert adds its rows, a delete takes them
-- away, an update takes the rows as they were away and adds them as they are (a status that
-- became Failed moves one payment from succeeded to failed in its hour; a capture adds its
-- amount, and a failure takes its captured amount out: captured counts payments not Failed).
-- An update that changed none of the figures appends nothing.
CREATE FUNCTION "console_payment_rollup_delta"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO console_payment_rollup_deltas (client_id, hour, payments, failed, amount, captured, refunded)
    SELECT client_id, date_trunc('hour', created_at, 'UTC'), count(*), count(*) FILTER (WHERE status = 'Failed'),
      sum(amount), coalesce(sum(captured_amount) FILTER (WHERE status <> 'Failed'), 0), sum(refunded_amount)
    FROM console_payment_rollup_new GROUP BY 1, 2;
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO console_payment_rollup_deltas (client_id, hour, payments, failed, amount, captured, refunded)
    SELECT client_id, hour, sum(payments), sum(failed), sum(amount), sum(captured), sum(refunded)
    FROM (
      SELECT client_id, date_trunc('hour', created_at, 'UTC') AS hour, 1 AS payments, (status = 'Failed')::int AS failed,
        amount, CASE WHEN status = 'Failed' THEN 0 ELSE captured_amount END AS captured, refunded_amount AS refunded
      FROM console_payment_rollup_new
      UNION ALL
      SELECT client_id, date_trunc('hour', created_at, 'UTC'), -1, -(status = 'Failed')::int, -amount,
        CASE WHEN status = 'Failed' THEN 0 ELSE -captured_amount END, -refunded_amount
      FROM console_payment_rollup_old
    ) d
    GROUP BY 1, 2
    HAVING sum(payments) <> 0 OR sum(failed) <> 0 OR sum(amount) <> 0 OR sum(captured) <> 0 OR sum(refunded) <> 0;
  ELSE
    INSERT INTO console_payment_rollup_deltas (client_id, hour, payments, failed, amount, captured, refunded)
    SELECT client_id, date_trunc('hour', created_at, 'UTC'), -count(*), -count(*) FILTER (WHERE status = 'Failed'),
      -sum(amount), -coalesce(sum(captured_amount) FILTER (WHERE status <> 'Failed'), 0), -sum(refunded_amount)
    FROM console_payment_rollup_old GROUP BY 1, 2;
  END IF;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER "console_payment_rollup_insert" AFTER INSERT ON "payments"
  REFERENCING NEW TABLE AS console_payment_rollup_new
  FOR EACH STATEMENT EXECUTE FUNCTION "console_payment_rollup_delta"();--> statement-breakpoint
CREATE TRIGGER "console_payment_rollup_update" AFTER UPDATE ON "payments"
  REFERENCING OLD TABLE AS console_payment_rollup_old NEW TABLE AS console_payment_rollup_new
  FOR EACH STATEMENT EXECUTE FUNCTION "console_payment_rollup_delta"();--> statement-breakpoint
CREATE TRIGGER "console_payment_rollup_delete" AFTER DELETE ON "payments"
  REFERENCING OLD TABLE AS console_payment_rollup_old
  FOR EACH STATEMENT EXECUTE FUNCTION "console_payment_rollup_delta"();--> statement-breakpoint
-- The payments there are already: the triggers' lock on payments (taken above, held until the
-- migrations commit) keeps any other write out until then, so each payment is counted once.
INSERT INTO "console_payment_rollup" (client_id, hour, payments, failed, amount, captured, refunded)
SELECT client_id, date_trunc('hour', created_at, 'UTC'), count(*), count(*) FILTER (WHERE status = 'Failed'),
  sum(amount), coalesce(sum(captured_amount) FILTER (WHERE status <> 'Failed'), 0), sum(refunded_amount)
FROM payments GROUP BY 1, 2;
