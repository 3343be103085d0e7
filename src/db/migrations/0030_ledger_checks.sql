CREATE TABLE "ledger_checks" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "ledger_checks_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"started_at" timestamp with time zone NOT NULL,
	"finished_at" timestamp with time zone NOT NULL,
	"duration_ms" integer NOT NULL,
	"violations" integer NOT NULL,
	"sample" jsonb NOT NULL
);
--> statement-breakpoint
CREATE INDEX "ledger_checks_finished_idx" ON "ledger_checks" USING btree ("finished_at");