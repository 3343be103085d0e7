-- Takes a request's idempotency lock, then reads the key's stored outcome. In READ COMMITTED a
-- statement reads from a snapshot taken when it starts, so a read in the same statement as the
-- lock could predate a request with the same key that committed (and released the lock) in
-- between: the outcome would be missed and the operation run twice. A VOLATILE PL/pgSQL
-- function takes a fresh snapshot for each query it runs, so this read comes after the lock.
CREATE FUNCTION "idempotency_check"("lock_key" text, "p_client_id" uuid, "p_operation" text, "p_key" text)
  RETURNS TABLE ("locked" boolean, "fingerprint" text, "status_code" integer, "response_body" text, "expires_at" timestamptz)
  LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtextextended(lock_key, 0)) THEN
    RETURN QUERY SELECT false, NULL::text, NULL::integer, NULL::text, NULL::timestamptz;
    RETURN;
  END IF;
  RETURN QUERY
    SELECT true, k.fingerprint, k.status_code, k.response_body, k.expires_at
    FROM (SELECT 1) AS one
    LEFT JOIN idempotency_keys k ON k.client_id = p_client_id AND k.operation = p_operation AND k.key = p_key;
END $$;
