ALTER TABLE "ledger_accounts" ADD CONSTRAINT "ledger_accounts_non_negative" CHECK ("allow_negative" OR "balance" >= 0);--> statement-breakpoint
ALTER TABLE "ledger_postings" ADD CONSTRAINT "ledger_postings_non_zero" CHECK ("amount" <> 0);--> statement-breakpoint
-- Every entry balances: checked once per entry when its transaction commits.
CREATE FUNCTION "ledger_entry_balances"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  total numeric;
  n integer;
BEGIN
  SELECT coalesce(sum(amount), 0), count(*) INTO total, n FROM ledger_postings WHERE entry_id = NEW.id;
  IF n < 2 OR total <> 0 THEN
    RAISE EXCEPTION 'ledger entry % does not balance (% postings, sum %)', NEW.id, n, total USING ERRCODE = '23514';
  END IF;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE CONSTRAINT TRIGGER "ledger_entries_balance" AFTER INSERT ON "ledger_entries"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "ledger_entry_balances"();
