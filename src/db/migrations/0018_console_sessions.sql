CREATE TABLE "console_sessions" (
	"id_hash" "bytea" PRIMARY KEY NOT NULL,
	"role" text NOT NULL,
	"client_id" uuid,
	"csrf_token" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "console_sessions_role" CHECK ("console_sessions"."role" in ('operator', 'merchant'))
);
--> statement-breakpoint
CREATE TABLE "request_log" (
	"id" uuid PRIMARY KEY NOT NULL,
	"client_id" uuid,
	"request_id" text NOT NULL,
	"method" text NOT NULL,
	"route" text NOT NULL,
	"path" text NOT NULL,
	"status" integer NOT NULL,
	"duration_ms" integer NOT NULL,
	"idempotency_key" text,
	"body" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "console_sessions" ADD CONSTRAINT "console_sessions_client_id_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "console_sessions_expiry_idx" ON "console_sessions" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "request_log_client_idx" ON "request_log" USING btree ("client_id","created_at","id");--> statement-breakpoint
CREATE INDEX "request_log_created_idx" ON "request_log" USING btree ("created_at");