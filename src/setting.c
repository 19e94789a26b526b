/*
 * setting.c
 *	  Settings a database has, that no session, role or client may
 *	  override: inventory.stock_notifications and inventory.change_feed.
 *
 * Each commit acts by its own session's value of such a setting, so one
 * session, role or client with another value than its database's would
 * leave the others with a stale or a partial picture.  The check hook of
 * each accepts postgresql.conf, ALTER SYSTEM, ALTER DATABASE (or ALTER ROLE
 * ALL, which is every database's) and their validation (PGC_S_TEST), and
 * refuses the levels below the database's: SET, a function's SET clause,
 * a client's options (the connection fails), and ALTER ROLE ... SET, which
 * PostgreSQL then ignores with a WARNING at each connection, as it does
 * any role setting it cannot apply.
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "setting.h"

/*
 * The check hook's work for the boolean setting name: whether source may
 * set it; why is the detail of the refusal, a sentence.
 */
bool
SettingOfDatabase(const char *name, bool newval, GucSource source, const char *why)
{
	char	   *dbname = NULL;

	switch (source)
	{
		case PGC_S_USER:
		case PGC_S_DATABASE_USER:
		case PGC_S_CLIENT:
		case PGC_S_SESSION:
			break;
		default:
			return true;
	}
	if (IsTransactionState() && OidIsValid(MyDatabaseId))
		dbname = get_database_name(MyDatabaseId);
	dbname = dbname ? pstrdup(quote_identifier(dbname)) : "...";
	GUC_check_errmsg("parameter \"%s\" can only be set for a database or for the server", name);
	GUC_check_errdetail("%s", why);
	if (source == PGC_S_USER || source == PGC_S_DATABASE_USER)
	{
		/* ALTER ROLE ... SET, ignored at each connection */
		char	   *role = NULL;

		if (IsTransactionState() && OidIsValid(GetSessionUserId()))
			role = GetUserNameFromId(GetSessionUserId(), true);
		role = role ? pstrdup(quote_identifier(role)) : "...";
		if (source == PGC_S_DATABASE_USER)
			GUC_check_errhint("Remove it from the role (ALTER ROLE %s IN DATABASE %s RESET %s) and set it for the database: ALTER DATABASE %s SET %s = %s.",
							  role, dbname, name, dbname, name, newval ? "on" : "off");
		else
			GUC_check_errhint("Remove it from the role (ALTER ROLE %s RESET %s) and set it for the database: ALTER DATABASE %s SET %s = %s.",
							  role, name, dbname, name, newval ? "on" : "off");
	}
	else
		GUC_check_errhint("Set it for the database: ALTER DATABASE %s SET %s = %s.",
						  dbname, name, newval ? "on" : "off");
	return false;
}
