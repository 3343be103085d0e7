-- The five tables every payment writes lose their foreign keys: each inserted row's keys cost a
-- trigger and a lookup that locks the parent row, ten per authorize (every row of a merchant
-- locked its one clients row). No parent is ever deleted, every id comes from a row the same
-- transaction read or wrote, and verifyLedger checks the ledger's references (schema.ts,
-- HOT_PATH_REFERENCES; docs/benchmarks.md).
ALTER TABLE "events" DROP CONSTRAINT "events_client_id_clients_id_fk";
--> statement-breakpoint
ALTER TABLE "ledger_entries" DROP CONSTRAINT "ledger_entries_client_id_clients_id_fk";
--> statement-breakpoint
ALTER TABLE "ledger_postings" DROP CONSTRAINT "ledger_postings_entry_id_ledger_entries_id_fk";
--> statement-breakpoint
ALTER TABLE "ledger_postings" DROP CONSTRAINT "ledger_postings_account_id_ledger_accounts_id_fk";
--> statement-breakpoint
ALTER TABLE "payment_intents" DROP CONSTRAINT "payment_intents_client_id_clients_id_fk";
--> statement-breakpoint
ALTER TABLE "payment_intents" DROP CONSTRAINT "payment_intents_wallet_id_wallets_id_fk";
--> statement-breakpoint
ALTER TABLE "payment_intents" DROP CONSTRAINT "payment_intents_gift_id_gifts_id_fk";
--> statement-breakpoint
ALTER TABLE "payments" DROP CONSTRAINT "payments_client_id_clients_id_fk";
--> statement-breakpoint
ALTER TABLE "payments" DROP CONSTRAINT "payments_intent_id_payment_intents_id_fk";
--> statement-breakpoint
ALTER TABLE "payments" DROP CONSTRAINT "payments_wallet_id_wallets_id_fk";
--> statement-breakpoint
ALTER TABLE "payments" DROP CONSTRAINT "payments_gift_id_gifts_id_fk";
