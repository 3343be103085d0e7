CREATE TABLE "counterparty_incoming_payments" (
	"id" uuid PRIMARY KEY NOT NULL,
	"client_id" uuid NOT NULL,
	"counterparty_id" uuid NOT NULL,
	"amount" bigint NOT NULL,
	"method" text NOT NULL,
	"as_of_date" date NOT NULL,
	"external_id" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "counterparty_payouts" (
	"id" uuid PRIMARY KEY NOT NULL,
	"client_id" uuid NOT NULL,
	"counterparty_id" uuid NOT NULL,
	"amount" bigint NOT NULL,
	"status" text NOT NULL,
	"description" text,
	"effective_date" date NOT NULL,
	"provider_ref" text,
	"return_code" text,
	"return_reason" text,
	"sent_at" timestamp with time zone,
	"completed_at" timestamp with time zone,
	"returned_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "counterparty_transfers" (
	"id" uuid PRIMARY KEY NOT NULL,
	"client_id" uuid NOT NULL,
	"from_counterparty_id" uuid NOT NULL,
	"to_counterparty_id" uuid NOT NULL,
	"amount" bigint NOT NULL,
	"status" text NOT NULL,
	"idempotency_key" text NOT NULL,
	"metadata" jsonb,
	"ledger_entry_id" uuid,
	"failure_reason" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "external_transactions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"client_id" uuid NOT NULL,
	"type" text NOT NULL,
	"linked_external_transaction_id" uuid,
	"source_id" text NOT NULL,
	"source_created_at" timestamp with time zone NOT NULL,
	"source_customer_id" text,
	"user_id" uuid,
	"channel" text,
	"payments" jsonb NOT NULL,
	"payload" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "counterparties" ADD COLUMN "deleted_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "counterparty_incoming_payments" ADD CONSTRAINT "counterparty_incoming_payments_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "counterparty_incoming_payments" ADD CONSTRAINT "counterparty_incoming_payments_counterparty_id_counterparties_id_fk" FOREIGN KEY ("counterparty_id") REFERENCES "public"."counterparties"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "counterparty_payouts" ADD CONSTRAINT "counterparty_payouts_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "counterparty_payouts" ADD CONSTRAINT "counterparty_payouts_counterparty_id_counterparties_id_fk" FOREIGN KEY ("counterparty_id") REFERENCES "public"."counterparties"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "counterparty_transfers" ADD CONSTRAINT "counterparty_transfers_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "counterparty_transfers" ADD CONSTRAINT "counterparty_transfers_from_counterparty_id_counterparties_id_fk" FOREIGN KEY ("from_counterparty_id") REFERENCES "public"."counterparties"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "counterparty_transfers" ADD CONSTRAINT "counterparty_transfers_to_counterparty_id_counterparties_id_fk" FOREIGN KEY ("to_counterparty_id") REFERENCES "public"."counterparties"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "external_transactions" ADD CONSTRAINT "external_transactions_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "external_transactions" ADD CONSTRAINT "external_transactions_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "counterparty_incoming_payments_external_uq" ON "counterparty_incoming_payments" USING btree ("client_id","external_id");--> statement-breakpoint
CREATE INDEX "counterparty_payouts_counterparty_idx" ON "counterparty_payouts" USING btree ("counterparty_id","created_at","id");--> statement-breakpoint
CREATE INDEX "counterparty_payouts_unsent_idx" ON "counterparty_payouts" USING btree ("created_at") WHERE status = 'Pending';--> statement-breakpoint
CREATE INDEX "counterparty_transfers_client_idx" ON "counterparty_transfers" USING btree ("client_id","created_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "external_transactions_source_uq" ON "external_transactions" USING btree ("client_id","type","source_id");--> statement-breakpoint
CREATE INDEX "external_transactions_client_idx" ON "external_transactions" USING btree ("client_id","created_at","id");--> statement-breakpoint
CREATE INDEX "external_transactions_user_idx" ON "external_transactions" USING btree ("user_id");