CREATE TABLE "deployment" (
	"id" boolean PRIMARY KEY DEFAULT true NOT NULL,
	"environment" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "deployment_one_row" CHECK ("deployment"."id"),
	CONSTRAINT "deployment_environment" CHECK ("deployment"."environment" in ('sandbox', 'live'))
);
