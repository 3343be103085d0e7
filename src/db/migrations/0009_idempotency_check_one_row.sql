-- idempotency_check returns one row, but PostgreSQL estimates 1,000 for any set-returning
-- function. Joined laterally per member of a group (deposits, authorizes), that estimate made
-- the plans' costs pass jit_above_cost, and every execution of a custom plan JIT-compiled
-- itself (13 ms of a 15 ms group check, auto_explain on the authorize benchmark).
ALTER FUNCTION "idempotency_check"(text, uuid, text, text) ROWS 1;
