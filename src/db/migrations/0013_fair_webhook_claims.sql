-- Fair webhook claims (src/modules/events/sql.ts, claimDueDeliveries). Each merchant's due
-- deliveries in order (the index below), so a claim takes a few of every merchant's instead of
-- the oldest of all, which one merchant's backlog could fill. Hand-written below the index:
-- the function and the clearing of stored reply excerpts.
CREATE INDEX "event_deliveries_client_due_idx" ON "event_deliveries" USING btree ("client_id","next_attempt_at") WHERE state = 'pending';
--> statement-breakpoint
-- Up to each merchant's room of its oldest due deliveries (room: p_cap less the attempts the
-- caller has in flight for it, from p_busy; merchants with none are passed over), for every
-- merchant with pending deliveries: the merchants come from a walk of the index above (two
-- probes each), and only when anything is due at all (the oldest unleased pending delivery,
-- from the due index). Webhooks in p_skip are passed over. A merchant's due rows are the range
-- from (client_id, -infinity) to (client_id, p_now), written as a row comparison that only
-- event_deliveries_client_due_idx can serve: written as client_id = m.client_id, the planner
-- (estimating rows evenly spread over merchants) walked the due index instead and filtered out
-- one merchant's whole backlog for every other merchant (300 ms with 200,000 due). Bitmap
-- scans are off, as in due_event_deliveries (migration 0008).
CREATE FUNCTION "due_event_deliveries_per_client"("p_now" timestamptz, "p_skip" uuid[], "p_busy" jsonb, "p_cap" integer)
  RETURNS TABLE ("id" uuid, "client_id" uuid, "webhook_id" uuid, "next_attempt_at" timestamptz)
  LANGUAGE sql STABLE
  SET enable_bitmapscan = off
  AS $$
    WITH RECURSIVE merchants(client_id) AS (
      SELECT (SELECT d.client_id FROM event_deliveries d WHERE d.state = 'pending' ORDER BY d.client_id LIMIT 1)
      WHERE (
        SELECT d.next_attempt_at FROM event_deliveries d
        WHERE d.state = 'pending' AND (d.lease_until IS NULL OR d.lease_until <= p_now)
        ORDER BY d.next_attempt_at LIMIT 1) <= p_now
      UNION ALL
      SELECT (SELECT d.client_id FROM event_deliveries d WHERE d.state = 'pending' AND d.client_id > m.client_id ORDER BY d.client_id LIMIT 1)
      FROM merchants m WHERE m.client_id IS NOT NULL
    )
    SELECT due.id, due.client_id, due.webhook_id, due.next_attempt_at
    FROM merchants m
    CROSS JOIN LATERAL (SELECT p_cap - coalesce((p_busy ->> m.client_id::text)::int, 0) AS room) r
    CROSS JOIN LATERAL (
      SELECT d.id, d.client_id, d.webhook_id, d.next_attempt_at FROM event_deliveries d
      WHERE d.state = 'pending' AND d.client_id >= m.client_id AND (d.client_id, d.next_attempt_at) <= (m.client_id, p_now)
        AND (d.lease_until IS NULL OR d.lease_until <= p_now)
        AND NOT (d.webhook_id = ANY (p_skip))
      ORDER BY d.client_id, d.next_attempt_at
      LIMIT r.room
    ) due
    WHERE m.client_id IS NOT NULL AND r.room > 0
  $$;
--> statement-breakpoint
DROP FUNCTION "due_event_deliveries"(timestamptz, integer, uuid[]);
--> statement-breakpoint
-- Reply excerpts are kept only from receivers on public addresses. Those stored before could
-- come from anywhere the sandbox reached (internal services included), and nothing recorded
-- where: they go.
UPDATE "delivery_attempts" SET "response_excerpt" = NULL WHERE "response_excerpt" IS NOT NULL;
