CREATE TABLE "authorization_attempts" (
	"id" uuid PRIMARY KEY NOT NULL,
	"client_id" uuid NOT NULL,
	"intent_id" uuid NOT NULL,
	"idempotency_key" text,
	"fingerprint" text NOT NULL,
	"state" text NOT NULL,
	"lease_until" timestamp with time zone,
	"amount" bigint NOT NULL,
	"request" jsonb NOT NULL,
	"sourcing" jsonb NOT NULL,
	"payment_id" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "card_reads" (
	"id" uuid PRIMARY KEY NOT NULL,
	"client_id" uuid NOT NULL,
	"card_id" uuid NOT NULL,
	"payment_id" uuid NOT NULL,
	"request_id" text NOT NULL,
	"ip" text NOT NULL,
	"read_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "payment_intents" (
	"id" uuid PRIMARY KEY NOT NULL,
	"client_id" uuid NOT NULL,
	"wallet_id" uuid,
	"gift_id" uuid,
	"user_id" uuid,
	"amount" bigint NOT NULL,
	"status" text NOT NULL,
	"error" text,
	"reference" text,
	"initiator" text NOT NULL,
	"payment_method" text NOT NULL,
	"look_up_id" text,
	"balance" jsonb NOT NULL,
	"billing_address" jsonb,
	"email" text,
	"full_name" text,
	"phone_number" text,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "payments" (
	"id" uuid PRIMARY KEY NOT NULL,
	"client_id" uuid NOT NULL,
	"intent_id" uuid,
	"wallet_id" uuid,
	"gift_id" uuid,
	"user_id" uuid,
	"rail" text NOT NULL,
	"status" text NOT NULL,
	"amount" bigint NOT NULL,
	"captured_amount" bigint DEFAULT 0 NOT NULL,
	"refunded_amount" bigint DEFAULT 0 NOT NULL,
	"channel" text,
	"reference" text,
	"linked_account_id" uuid,
	"sourcing" jsonb NOT NULL,
	"captured" jsonb,
	"external_payments" jsonb NOT NULL,
	"disbursement" jsonb NOT NULL,
	"processor" jsonb,
	"network_authorized" bigint DEFAULT 0 NOT NULL,
	"failure_reason" text,
	"expires_at" timestamp with time zone NOT NULL,
	"settle_after" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"captured_at" timestamp with time zone,
	"settled_at" timestamp with time zone,
	"canceled_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "refunds" (
	"id" uuid PRIMARY KEY NOT NULL,
	"client_id" uuid NOT NULL,
	"payment_id" uuid NOT NULL,
	"amount" bigint NOT NULL,
	"returned" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sandbox_processor_charges" (
	"reference" text PRIMARY KEY NOT NULL,
	"client_id" uuid NOT NULL,
	"amount" bigint NOT NULL,
	"outcome" text NOT NULL,
	"calls" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "virtual_cards" (
	"id" uuid PRIMARY KEY NOT NULL,
	"client_id" uuid NOT NULL,
	"payment_id" uuid,
	"gift_id" uuid,
	"number_sealed" text NOT NULL,
	"cvc_sealed" text NOT NULL,
	"last4" text NOT NULL,
	"expiration_month" integer NOT NULL,
	"expiration_year" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "authorization_attempts" ADD CONSTRAINT "authorization_attempts_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "authorization_attempts" ADD CONSTRAINT "authorization_attempts_intent_id_payment_intents_id_fk" FOREIGN KEY ("intent_id") REFERENCES "public"."payment_intents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "card_reads" ADD CONSTRAINT "card_reads_card_id_virtual_cards_id_fk" FOREIGN KEY ("card_id") REFERENCES "public"."virtual_cards"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payment_intents" ADD CONSTRAINT "payment_intents_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payment_intents" ADD CONSTRAINT "payment_intents_wallet_id_wallets_id_fk" FOREIGN KEY ("wallet_id") REFERENCES "public"."wallets"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payment_intents" ADD CONSTRAINT "payment_intents_gift_id_gifts_id_fk" FOREIGN KEY ("gift_id") REFERENCES "public"."gifts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payments" ADD CONSTRAINT "payments_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payments" ADD CONSTRAINT "payments_intent_id_payment_intents_id_fk" FOREIGN KEY ("intent_id") REFERENCES "public"."payment_intents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payments" ADD CONSTRAINT "payments_wallet_id_wallets_id_fk" FOREIGN KEY ("wallet_id") REFERENCES "public"."wallets"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payments" ADD CONSTRAINT "payments_gift_id_gifts_id_fk" FOREIGN KEY ("gift_id") REFERENCES "public"."gifts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "refunds" ADD CONSTRAINT "refunds_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "refunds" ADD CONSTRAINT "refunds_payment_id_payments_id_fk" FOREIGN KEY ("payment_id") REFERENCES "public"."payments"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "virtual_cards" ADD CONSTRAINT "virtual_cards_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "virtual_cards" ADD CONSTRAINT "virtual_cards_payment_id_payments_id_fk" FOREIGN KEY ("payment_id") REFERENCES "public"."payments"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "virtual_cards" ADD CONSTRAINT "virtual_cards_gift_id_gifts_id_fk" FOREIGN KEY ("gift_id") REFERENCES "public"."gifts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "authorization_attempts_intent_idx" ON "authorization_attempts" USING btree ("intent_id","created_at");--> statement-breakpoint
CREATE INDEX "authorization_attempts_open_idx" ON "authorization_attempts" USING btree ("lease_until") WHERE state = 'processing';--> statement-breakpoint
CREATE INDEX "card_reads_card_idx" ON "card_reads" USING btree ("card_id","read_at");--> statement-breakpoint
CREATE INDEX "payment_intents_client_idx" ON "payment_intents" USING btree ("client_id","created_at","id");--> statement-breakpoint
CREATE INDEX "payment_intents_expiring_idx" ON "payment_intents" USING btree ("expires_at") WHERE status = 'Promotable';--> statement-breakpoint
CREATE INDEX "payments_client_idx" ON "payments" USING btree ("client_id","created_at","id");--> statement-breakpoint
CREATE INDEX "payments_intent_idx" ON "payments" USING btree ("intent_id");--> statement-breakpoint
CREATE INDEX "payments_expiring_idx" ON "payments" USING btree ("expires_at") WHERE status = 'Created';--> statement-breakpoint
CREATE INDEX "payments_settling_idx" ON "payments" USING btree ("settle_after") WHERE status = 'Processing';--> statement-breakpoint
CREATE INDEX "refunds_payment_idx" ON "refunds" USING btree ("payment_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "virtual_cards_payment_uq" ON "virtual_cards" USING btree ("payment_id");--> statement-breakpoint
CREATE UNIQUE INDEX "virtual_cards_gift_uq" ON "virtual_cards" USING btree ("gift_id");