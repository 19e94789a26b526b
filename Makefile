# inventory: stock reservations that never oversell (PGXS)
#
# Two extensions: inventory, in each database that holds stock (a node),
# and inventory_router, SQL only, in a database that routes the same API to
# the nodes over PL/Proxy (see the README, Scaling out).

EXTENSION = inventory inventory_router

MODULE_big = inventory
OBJS = \
	src/inventory.o \
	src/state.o \
	src/state_parse.o \
	src/catalog.o \
	src/stmt.o \
	src/ledger.o \
	src/cache.o \
	src/pending.o \
	src/trigger.o \
	src/args.o \
	src/outcome.o \
	src/api.o \
	src/cart.o \
	src/batch.o \
	src/rules.o \
	src/keyfilter.o \
	src/verify.o \
	src/stats.o \
	src/maintenance.o \
	src/pool.o \
	src/launcher.o \
	src/restore.o \
	src/utility.o \
	src/worker.o

# inventory--*.sql does not match inventory_router--*.sql
DATA = $(wildcard inventory--*.sql) $(wildcard inventory_router--*.sql)

# Warnings are errors.  PostgreSQL's own headers and fmgr conventions trip
# -Wunused-parameter and -Wmissing-field-initializers, so those stay off.
PG_CFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers

TESTCONF = $(srcdir)/test/inventory.conf

# every sql/NAME.sql is a regression test, every specs/NAME.spec an
# isolation spec, every test/t/*.pl a TAP test; each boots its own cluster
REGRESS = $(sort $(basename $(notdir $(wildcard sql/*.sql))))
REGRESS_OPTS = --temp-instance=tmp_check --temp-config=$(TESTCONF)
ISOLATION = $(sort $(basename $(notdir $(wildcard specs/*.spec))))
ISOLATION_OPTS = --temp-instance=tmp_check_iso --temp-config=$(TESTCONF)
TAP_TESTS = 1
PROVE_TESTS = $(wildcard test/t/*.pl)

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

$(OBJS): $(wildcard src/*.h)

# One suite at a time, on a temporary cluster of its own (see the README,
# Testing); one test with REGRESS=, ISOLATION= or PROVE_TESTS=:
#   make installcheck-regress REGRESS=restore
#   make installcheck-isolation ISOLATION=last_unit
#   make installcheck-tap PROVE_TESTS=test/t/012_failover.pl
# pgTAP needs a running server that preloads the library (PGHOST, PGPORT,
# PGDATABASE as for psql):
#   make installcheck-pgtap [PGTAP_TESTS=test/pgtap/outcomes.sql]
PGTAP_TESTS = $(wildcard $(srcdir)/test/pgtap/*.sql)

.PHONY: installcheck-regress installcheck-isolation installcheck-tap installcheck-pgtap
installcheck-regress:
	$(MAKE) installcheck ISOLATION= TAP_TESTS=
installcheck-isolation:
	$(MAKE) installcheck REGRESS= TAP_TESTS=
installcheck-tap:
	$(MAKE) installcheck REGRESS= ISOLATION=
installcheck-pgtap:
	pg_prove --verbose $(PGTAP_TESTS)
