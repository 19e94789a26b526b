# inventory: stock reservations that never oversell (PGXS)

EXTENSION = inventory
EXTVERSION = 0.1

MODULE_big = inventory
OBJS = \
	src/inventory.o \
	src/state.o \
	src/catalog.o \
	src/ledger.o \
	src/cache.o \
	src/xact.o \
	src/trigger.o \
	src/api.o \
	src/verify.o \
	src/stats.o

DATA = $(wildcard inventory--*.sql)

# Warnings are errors.  PostgreSQL's own headers and fmgr conventions trip
# -Wunused-parameter and -Wmissing-field-initializers, so those stay off.
PG_CFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers

TESTCONF = $(srcdir)/test/inventory.conf

REGRESS = state
REGRESS_OPTS = --temp-instance=tmp_check --temp-config=$(TESTCONF)

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

$(OBJS): $(wildcard src/*.h)
