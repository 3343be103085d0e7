-- The webhook workers' claim runs without JIT compilation. PostgreSQL compiles a statement whose
-- estimated cost passes jit_above_cost (100,000 by default), and the claim's statement inside
-- this function is planned at every call: with a backlog of 500,000 pending deliveries analyzed
-- as such, each call spent about 29 ms compiling for under 1 ms of work (30 ms a claim against
-- 1 ms without), so the workers slowed down most when most was waiting for them.
ALTER FUNCTION "due_event_deliveries_per_client"(timestamptz, uuid[], jsonb, integer) SET jit = off;
