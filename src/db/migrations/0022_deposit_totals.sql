CREATE TABLE "deposit_totals" (
	"wallet_id" uuid NOT NULL,
	"linked_account_id" uuid NOT NULL,
	"client_id" uuid NOT NULL,
	"cleared" bigint NOT NULL,
	CONSTRAINT "deposit_totals_wallet_id_linked_account_id_pk" PRIMARY KEY("wallet_id","linked_account_id")
);
--> statement-breakpoint
ALTER TABLE "deposit_totals" ADD CONSTRAINT "deposit_totals_wallet_id_wallets_id_fk" FOREIGN KEY ("wallet_id") REFERENCES "public"."wallets"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "deposit_totals" ADD CONSTRAINT "deposit_totals_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
-- What the deposits cleared before this migration brought in.
INSERT INTO "deposit_totals" ("wallet_id", "linked_account_id", "client_id", "cleared")
SELECT "wallet_id", "linked_account_id", "client_id", sum("wallet_amount") FROM "transactions" WHERE "status" = 'Cleared'
GROUP BY "wallet_id", "linked_account_id", "client_id";
