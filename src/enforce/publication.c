/*
 * publication.c
 *	  Publications of the inventory tables that would stop the extension
 *	  from writing them.
 *
 * PostgreSQL refuses every UPDATE of a table that a publication publishes,
 * updates included, with a row filter on a column outside the table's
 * replica identity, or with a column list that leaves out a column of it,
 * or while the table has no replica identity at all; and the same for
 * DELETE (CheckCmdReplicaIdentity).  For inventory.ledger that is every
 * confirm, cancel, extend, expiry and fold; for inventory.sku every fold
 * and change of rules: the seller stops.  CREATE and ALTER PUBLICATION,
 * ALTER TABLE of the tables (REPLICA IDENTITY) and DROP INDEX (of an
 * index that is a replica identity) can bring that about.  Once such a
 * statement has run, in its transaction, the tables are checked as the
 * executor checks an UPDATE and a DELETE of them, and a statement that
 * leaves them unwritable is refused, naming the publication and saying
 * what to do instead.  Where they were unwritable already (a publication
 * made before the library checked), the statement runs and a warning says
 * so.  DROP INDEX is checked before it runs, as DROP INDEX CONCURRENTLY
 * has committed its first steps when it ends.
 *
 * Publishing the whole tables -- FOR TABLE without a filter, FOR TABLES IN
 * SCHEMA, FOR ALL TABLES -- is fine: their primary keys are their replica
 * identity.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/sysattr.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_publication.h"
#include "catalog/pg_publication_rel.h"
#include "commands/extension.h"
#include "commands/publicationcmds.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"

#include "enforce/publication.h"

typedef enum Breakage
{
	BREAKS_NOTHING,
	BREAKS_BY_ROW_FILTER,
	BREAKS_BY_COLUMN_LIST,
	BREAKS_WITHOUT_IDENTITY
} Breakage;

/* inventory.ledger and inventory.sku, where the extension is installed */
static int
InventoryTables(Oid *relids)
{
	Oid			nsp;
	int			n = 0;

	if (!OidIsValid(get_extension_oid("inventory", true)))
		return 0;
	nsp = get_namespace_oid("inventory", true);
	if (!OidIsValid(nsp))
		return 0;
	relids[n] = get_relname_relid("ledger", nsp);
	if (OidIsValid(relids[n]))
		n++;
	relids[n] = get_relname_relid("sku", nsp);
	if (OidIsValid(relids[n]))
		n++;
	return n;
}

static bool
HasIdentity(Relation rel)
{
	return rel->rd_rel->relreplident == REPLICA_IDENTITY_FULL ||
		OidIsValid(RelationGetReplicaIndex(rel));
}

/* Would an UPDATE (or a DELETE) of rel fail as things are? */
static bool
Fails(Relation rel, CmdType cmd)
{
	PublicationDesc desc;
	bool		update = (cmd == CMD_UPDATE);

	RelationBuildPublicationDesc(rel, &desc);
	if (!(update ? desc.rf_valid_for_update : desc.rf_valid_for_delete) ||
		!(update ? desc.cols_valid_for_update : desc.cols_valid_for_delete))
		return true;
	return !HasIdentity(rel) &&
		(update ? desc.pubactions.pubupdate : desc.pubactions.pubdelete);
}

/* every publication that publishes rel, whichever way */
static List *
PublicationsOf(Relation rel)
{
	List	   *puboids = GetRelationPublications(RelationGetRelid(rel));

	puboids = list_concat_unique_oid(puboids,
									 GetSchemaPublications(RelationGetNamespace(rel)));
	return list_concat_unique_oid(puboids, GetAllTablesPublications());
}

static bool
Publishes(Publication *pub, CmdType cmd)
{
	return cmd == CMD_UPDATE ? pub->pubactions.pubupdate : pub->pubactions.pubdelete;
}

/* Which publication makes cmd of rel fail, and how. */
static Breakage
Culprit(Relation rel, CmdType cmd, Publication **culprit)
{
	ListCell   *lc;

	foreach(lc, PublicationsOf(rel))
	{
		Publication *pub = GetPublication(lfirst_oid(lc));

		if (!Publishes(pub, cmd))
			continue;
		*culprit = pub;
		if (!HasIdentity(rel))
			return BREAKS_WITHOUT_IDENTITY;
		/* row filters and column lists belong to FOR TABLE only */
		if (!pub->alltables &&
			pub_rf_contains_invalid_column(pub->oid, rel, NIL, pub->pubviaroot))
			return BREAKS_BY_ROW_FILTER;
		if (!pub->alltables &&
			pub_collist_contains_invalid_column(pub->oid, rel, NIL, pub->pubviaroot))
			return BREAKS_BY_COLUMN_LIST;
	}
	*culprit = NULL;
	return BREAKS_NOTHING;
}

/*
 * The names of a set of columns, offset as the relcache's sets are:
 * "a", "b" -- with the word before them, column "a" or columns "a", "b".
 */
static char *
ColumnNames(Relation rel, Bitmapset *attrs, bool word)
{
	StringInfoData buf;
	int			x = -1;
	int			n = 0;

	initStringInfo(&buf);
	if (word)
		appendStringInfoString(&buf, bms_num_members(attrs) > 1 ? "columns " : "column ");
	while ((x = bms_next_member(attrs, x)) >= 0)
	{
		AttrNumber	attnum = x + FirstLowInvalidHeapAttributeNumber;

		if (attnum <= 0)
			continue;
		appendStringInfo(&buf, "%s\"%s\"", n++ > 0 ? ", " : "",
						 NameStr(TupleDescAttr(RelationGetDescr(rel), attnum - 1)->attname));
	}
	return buf.data;
}

/* the columns of rel's replica identity: every column when FULL */
static Bitmapset *
IdentityColumns(Relation rel)
{
	Bitmapset  *all = NULL;
	TupleDesc	desc = RelationGetDescr(rel);

	if (rel->rd_rel->relreplident != REPLICA_IDENTITY_FULL)
		return RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_IDENTITY_KEY);
	for (int i = 0; i < desc->natts; i++)
	{
		if (!TupleDescAttr(desc, i)->attisdropped)
			all = bms_add_member(all, i + 1 - FirstLowInvalidHeapAttributeNumber);
	}
	return all;
}

/*
 * The columns of the publication's row filter for rel that are outside its
 * replica identity (filter), or the columns of the replica identity that
 * its column list leaves out.
 */
static char *
OffendingColumns(Relation rel, Oid pubid, bool filter)
{
	HeapTuple	tup;
	Bitmapset  *identity = IdentityColumns(rel);
	Bitmapset  *result = NULL;
	Datum		d;
	bool		isnull;

	tup = SearchSysCache2(PUBLICATIONRELMAP, ObjectIdGetDatum(RelationGetRelid(rel)),
						  ObjectIdGetDatum(pubid));
	if (!HeapTupleIsValid(tup))
		return pstrdup("");
	if (filter)
	{
		d = SysCacheGetAttr(PUBLICATIONRELMAP, tup, Anum_pg_publication_rel_prqual, &isnull);
		if (!isnull)
			pull_varattnos(stringToNode(TextDatumGetCString(d)), 1, &result);
		result = bms_difference(result, identity);
	}
	else
	{
		d = SysCacheGetAttr(PUBLICATIONRELMAP, tup, Anum_pg_publication_rel_prattrs, &isnull);
		result = bms_copy(identity);
		if (!isnull)
		{
			int2vector *cols = (int2vector *) DatumGetPointer(d);

			for (int i = 0; i < cols->dim1; i++)
				result = bms_del_member(result,
										cols->values[i] - FirstLowInvalidHeapAttributeNumber);
		}
	}
	ReleaseSysCache(tup);
	return ColumnNames(rel, result, true);
}

/* What the extension's writes of rel by cmd are, for the detail. */
static const char *
Writes(Relation rel, CmdType cmd)
{
	bool		ledger = strcmp(RelationGetRelationName(rel), "ledger") == 0;

	if (cmd == CMD_UPDATE)
		return ledger ? "confirms, cancels, extends, expiries and folds update it" :
			"folds and changes of a SKU's rules update it";
	return ledger ? "an administrator deletes folded movements from it" :
		"an administrator deletes SKUs without movements from it";
}

/*
 * The message: whole sentences, one for each tense (a warning says what is
 * so already, an error what would be) and command.
 */
static const char *
BreakMessage(int elevel, CmdType cmd, bool named)
{
	if (named && elevel < ERROR)
		return cmd == CMD_UPDATE ?
			gettext_noop("publication \"%s\" makes every update of %s fail") :
			gettext_noop("publication \"%s\" makes every delete of %s fail");
	if (named)
		return cmd == CMD_UPDATE ?
			gettext_noop("publication \"%s\" would make every update of %s fail") :
			gettext_noop("publication \"%s\" would make every delete of %s fail");
	if (elevel < ERROR)
		return cmd == CMD_UPDATE ?
			gettext_noop("the publications of %s make every update of it fail") :
			gettext_noop("the publications of %s make every delete of it fail");
	return cmd == CMD_UPDATE ?
		gettext_noop("the publications of %s would make every update of it fail") :
		gettext_noop("the publications of %s would make every delete of it fail");
}

/* The detail of a table without a replica identity, likewise. */
static const char *
NoIdentityDetail(int elevel, CmdType cmd)
{
	if (elevel < ERROR)
		return cmd == CMD_UPDATE ?
			gettext_noop("The table has no replica identity and the publication publishes its updates: PostgreSQL then refuses every %s of the table, and %s.") :
			gettext_noop("The table has no replica identity and the publication publishes its deletes: PostgreSQL then refuses every %s of the table, and %s.");
	return cmd == CMD_UPDATE ?
		gettext_noop("The table would have no replica identity and the publication publishes its updates: PostgreSQL then refuses every %s of the table, and %s.") :
		gettext_noop("The table would have no replica identity and the publication publishes its deletes: PostgreSQL then refuses every %s of the table, and %s.");
}

static void
Report(int elevel, Relation rel, CmdType cmd, Breakage how, Publication *pub)
{
	const char *table = psprintf("inventory.%s", RelationGetRelationName(rel));
	const char *WHAT = cmd == CMD_UPDATE ? "UPDATE" : "DELETE";
	const char *msg = BreakMessage(elevel, cmd, how != BREAKS_NOTHING);
	char	   *identity = ColumnNames(rel, IdentityColumns(rel), false);

	switch (how)
	{
		case BREAKS_BY_ROW_FILTER:
			ereport(elevel,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg(msg, pub->name, table),
					 errdetail("Its row filter for %s uses %s, outside the table's replica identity (%s): PostgreSQL then refuses every %s of the table, and %s.",
							   table, OffendingColumns(rel, pub->oid, true), identity,
							   WHAT, Writes(rel, cmd)),
					 errhint("Filter in the consumer instead, or on the replica identity columns (%s) only.",
							 identity)));
			break;
		case BREAKS_BY_COLUMN_LIST:
			ereport(elevel,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg(msg, pub->name, table),
					 errdetail("Its column list for %s leaves out %s of the table's replica identity: PostgreSQL then refuses every %s of the table, and %s.",
							   table, OffendingColumns(rel, pub->oid, false), WHAT,
							   Writes(rel, cmd)),
					 errhint("List the replica identity columns (%s) too, or publish every column and leave columns out in the consumer.",
							 identity)));
			break;
		case BREAKS_WITHOUT_IDENTITY:
			ereport(elevel,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg(msg, pub->name, table),
					 errdetail(NoIdentityDetail(elevel, cmd), WHAT, Writes(rel, cmd)),
					 errhint("Keep a replica identity on the table: ALTER TABLE %s REPLICA IDENTITY DEFAULT uses its primary key.",
							 table)));
			break;
		case BREAKS_NOTHING:
			/* PostgreSQL says it fails and no publication explains why */
			ereport(elevel,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg(msg, table),
					 errdetail("PostgreSQL would refuse every %s of the table, and %s.",
							   WHAT, Writes(rel, cmd))));
			break;
	}
}

/*
 * Checks each table, UPDATE then DELETE; returns whether one would fail.
 * With report, reports the first failure found at elevel.
 */
static bool
CheckTables(bool report, int elevel)
{
	static const CmdType cmds[] = {CMD_UPDATE, CMD_DELETE};
	Oid			relids[2];
	int			n = InventoryTables(relids);
	bool		fails = false;

	for (int i = 0; i < n && !fails; i++)
	{
		Relation	rel = relation_open(relids[i], AccessShareLock);

		for (int c = 0; c < (int) lengthof(cmds) && !fails; c++)
		{
			fails = Fails(rel, cmds[c]);
			if (fails && report)
			{
				Publication *pub;
				Breakage	how = Culprit(rel, cmds[c], &pub);

				Report(elevel, rel, cmds[c], how, pub);
			}
		}
		relation_close(rel, AccessShareLock);
	}
	return fails;
}

/*
 * Before a statement that may change publications or replica identities:
 * would an UPDATE or a DELETE of the tables fail already?
 */
bool
PublicationsBreakTables(void)
{
	return CheckTables(false, 0);
}

/*
 * After it, in its transaction: refuses it if it leaves the tables
 * unwritable, or warns if they were so before it.
 */
void
PublicationsCheck(bool were_broken)
{
	CommandCounterIncrement();
	(void) CheckTables(true, were_broken ? WARNING : ERROR);
}

/*
 * Before DROP INDEX: refuses to drop the index that is the replica identity
 * of one of the tables (REPLICA IDENTITY USING INDEX) while a publication
 * publishes its updates or deletes.
 */
void
PublicationsCheckDropIndex(List *objects)
{
	static const CmdType cmds[] = {CMD_UPDATE, CMD_DELETE};
	Oid			relids[2];
	int			n = InventoryTables(relids);
	ListCell   *lc;

	if (n == 0)
		return;
	foreach(lc, objects)
	{
		RangeVar   *rv = makeRangeVarFromNameList((List *) lfirst(lc));
		Oid			index = RangeVarGetRelid(rv, NoLock, true);

		for (int i = 0; i < n && OidIsValid(index); i++)
		{
			Relation	rel = relation_open(relids[i], AccessShareLock);

			if (rel->rd_rel->relreplident == REPLICA_IDENTITY_INDEX &&
				RelationGetReplicaIndex(rel) == index)
			{
				for (int c = 0; c < (int) lengthof(cmds); c++)
				{
					ListCell   *pc;

					foreach(pc, PublicationsOf(rel))
					{
						Publication *pub = GetPublication(lfirst_oid(pc));

						if (Publishes(pub, cmds[c]))
							Report(ERROR, rel, cmds[c], BREAKS_WITHOUT_IDENTITY, pub);
					}
				}
			}
			relation_close(rel, AccessShareLock);
		}
	}
}
