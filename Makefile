# inventory: stock reservations that never oversell (PGXS)
#
# Two extensions: inventory, in each database that holds stock (a node),
# and inventory_router, SQL only, in a database that routes the same API to
# the nodes over PL/Proxy (see docs/scaling-out.md).

EXTENSION = inventory inventory_router

MODULE_big = inventory
OBJS = \
	src/init.o \
	src/fault.o \
	src/setting.o \
	src/api/api.o \
	src/api/args.o \
	src/api/batch.o \
	src/api/changes.o \
	src/api/cart.o \
	src/api/db_stats.o \
	src/api/reconciler_admin.o \
	src/api/reservation.o \
	src/api/reserve_now.o \
	src/api/restore_admin.o \
	src/api/stats.o \
	src/api/verify.o \
	src/worker/express_writer.o \
	src/worker/launcher.o \
	src/worker/notify.o \
	src/worker/worker.o \
	src/movement/express_batch.o \
	src/movement/movement.o \
	src/movement/outcome.o \
	src/maintenance/expire.o \
	src/maintenance/fold.o \
	src/maintenance/reconcile.o \
	src/maintenance/reconciler.o \
	src/maintenance/retain.o \
	src/maintenance/verify.o \
	src/enforce/ask_fence.o \
	src/enforce/feed.o \
	src/enforce/publication.o \
	src/enforce/restore.o \
	src/enforce/rules.o \
	src/enforce/trigger.o \
	src/enforce/utility.o \
	src/xact/pending.o \
	src/shmem/asks.o \
	src/shmem/cache.o \
	src/shmem/cache_notify.o \
	src/shmem/cache_restore.o \
	src/shmem/cache_stats.o \
	src/shmem/escrow.o \
	src/shmem/express.o \
	src/shmem/keyfilter.o \
	src/shmem/metrics.o \
	src/shmem/pool.o \
	src/tables/catalog.o \
	src/tables/change_table.o \
	src/tables/keyscan.o \
	src/tables/ledger_row.o \
	src/tables/ledger_table.o \
	src/tables/restore_state.o \
	src/tables/markers.o \
	src/tables/sandbox.o \
	src/tables/sku_row.o \
	src/tables/stmt.o \
	src/types/state.o \
	src/types/state_parse.o

# inventory--*.sql does not match inventory_router--*.sql
DATA = $(wildcard inventory--*.sql) $(wildcard inventory_router--*.sql)

# PostgreSQL's own headers and fmgr conventions trip -Wunused-parameter and
# -Wmissing-field-initializers, so those stay off.
PG_CPPFLAGS = -I$(srcdir)/src

# A build for the tests: faults injected on purpose (src/fault.h).
ifdef INVENTORY_FAULTS
PG_CPPFLAGS += -DINV_FAULT_INJECTION
endif
PG_CFLAGS = -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
# warnings are errors in CI (.ci/run sets INVENTORY_WERROR), not for a
# packager on another compiler
ifdef INVENTORY_WERROR
PG_CFLAGS += -Werror
endif

TESTCONF = $(srcdir)/test/inventory.conf

# The quick tier, `make installcheck`: every sql/NAME.sql is a regression
# test, every specs/NAME.spec an isolation spec, every test/pgtap/NAME.sql a
# pgTAP file; each suite boots a temporary cluster of its own that preloads
# the library (test/inventory.conf), so no server is needed.  The TAP tests
# (test/t/*.pl: crashes, restarts, failover, dump and restore, upgrades, the
# router) take longer and have their own target, `make installcheck-tap`.
REGRESS = $(sort $(basename $(notdir $(wildcard sql/*.sql))))
REGRESS_OPTS = --temp-instance=tmp_check --temp-config=$(TESTCONF)
ISOLATION = $(sort $(basename $(notdir $(wildcard specs/*.spec))))
# the login roles the specs' sessions take (SET SESSION AUTHORIZATION: one
# conninfo serves every session); the regression files make theirs with
# test/roles.sql, which a spec cannot include
ISOLATION_OPTS = --temp-instance=tmp_check_iso --temp-config=$(TESTCONF) \
	--temp-config=$(srcdir)/test/isolation.conf \
	--create-role=shop_app,shop_admin,shop_monitor
PGTAP_TESTS = $(sort $(wildcard $(srcdir)/test/pgtap/*.sql))
PROVE_TESTS = $(sort $(wildcard test/t/*.pl))
EXTRA_CLEAN = tmp_check_pgtap .build-flags

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

$(OBJS): $(wildcard $(srcdir)/src/*.h $(srcdir)/src/*/*.h) .build-flags

# the library exports only what PostgreSQL looks up by name (src/exports.map)
ifeq ($(PORTNAME),linux)
SHLIB_LINK += -Wl,--version-script=$(srcdir)/src/exports.map
$(shlib): $(srcdir)/src/exports.map
endif

# a build with other flags (INVENTORY_FAULTS) compiles everything again
.build-flags: FORCE
	@echo '$(PG_CPPFLAGS)' | cmp -s - $@ || echo '$(PG_CPPFLAGS)' > $@
.PHONY: FORCE

# pgTAP is part of the quick tier (its prerequisite: it runs first)
ifneq ($(strip $(PGTAP_TESTS)),)
installcheck: installcheck-pgtap
endif

# One suite at a time; one test with REGRESS=, ISOLATION=, PGTAP_TESTS= or
# PROVE_TESTS= (see CONTRIBUTING.md, Testing):
#   make installcheck-regress REGRESS=restore
#   make installcheck-isolation ISOLATION=last_unit
#   make installcheck-pgtap PGTAP_TESTS=test/pgtap/outcomes.sql
#   make installcheck-tap PROVE_TESTS=test/t/012_failover.pl
.PHONY: installcheck-regress installcheck-isolation installcheck-pgtap installcheck-tap
installcheck-regress:
	$(MAKE) installcheck ISOLATION= PGTAP_TESTS=
installcheck-isolation:
	$(MAKE) installcheck REGRESS= PGTAP_TESTS=
installcheck-pgtap:
	$(srcdir)/test/pgtap/run.sh tmp_check_pgtap $(TESTCONF) $(PGTAP_TESTS)
installcheck-tap:
	$(prove_installcheck)
