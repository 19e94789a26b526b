\set roles_sql_echo :ECHO
\set ECHO none
-- test/roles.sql: the login roles the suites connect as, one for each of
-- the extension's roles (docs/operations.md, "Roles and privileges"):
--   shop_app      LOGIN IN ROLE inventory_app      the application's calls
--   shop_admin    LOGIN IN ROLE inventory_admin    administration
--   shop_monitor  LOGIN IN ROLE inventory_monitor  reading, for monitoring
-- Run by the superuser, after CREATE EXTENSION (which creates the three
-- group roles); idempotent: each role is created if missing, and given its
-- membership and LOGIN if it lacks them.  Roles belong to the whole server,
-- so they outlive a DROP EXTENSION.  In a regression file:
--   \ir test/roles.sql
-- (pg_regress feeds the file to psql on its standard input, so \ir resolves
-- from the directory make runs in, the top of the tree).  The isolation
-- specs repeat the DO block in their setup.  Not echoed: every expected
-- output would otherwise repeat it.
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN SELECT * FROM (VALUES ('shop_app', 'inventory_app'),
								   ('shop_admin', 'inventory_admin'),
								   ('shop_monitor', 'inventory_monitor')) AS v (login, grp)
	LOOP
		IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = r.login) THEN
			EXECUTE format('CREATE ROLE %I LOGIN', r.login);
		ELSIF NOT (SELECT rolcanlogin FROM pg_catalog.pg_roles WHERE rolname = r.login) THEN
			EXECUTE format('ALTER ROLE %I LOGIN', r.login);
		END IF;
		IF NOT EXISTS (SELECT FROM pg_catalog.pg_auth_members m
						WHERE m.member = r.login::regrole AND m.roleid = r.grp::regrole) THEN
			EXECUTE format('GRANT %I TO %I', r.grp, r.login);
		END IF;
	END LOOP;
END
$$;
\set ECHO :roles_sql_echo
