-- The oldest due deliveries, read in the order of event_deliveries_due_idx so the scan stops
-- after `p_limit` rows. Left to itself the planner, trusting statistics taken while the table
-- was small, chose a bitmap scan that read and sorted the whole backlog on every claim (75 ms
-- with 200,000 pending in the soak, and slower as the backlog grew). Bitmap scans are off
-- inside this function only. Webhooks in `p_skip` are passed over.
CREATE FUNCTION "due_event_deliveries"("p_now" timestamptz, "p_limit" integer, "p_skip" uuid[])
  RETURNS TABLE ("id" uuid, "webhook_id" uuid, "next_attempt_at" timestamptz)
  LANGUAGE sql STABLE
  SET enable_bitmapscan = off
  AS $$
    SELECT d.id, d.webhook_id, d.next_attempt_at FROM event_deliveries d
    WHERE d.state = 'pending' AND d.next_attempt_at <= p_now
      AND (d.lease_until IS NULL OR d.lease_until <= p_now)
      AND NOT (d.webhook_id = ANY (p_skip))
    ORDER BY d.next_attempt_at
    LIMIT p_limit
  $$;
