# scripts/lib.sh -- set-up shared by scripts/test.sh, scripts/demo.sh and
# bench/run.py (which runs its functions through bash).  Source it; it
# defines functions and changes nothing itself.
#
# inv_setup: installs missing Debian packages (as root) or names them,
#            builds and installs the extension.
# inv_as_pg CMD...: runs CMD as the non-root user that owns PostgreSQL.
# inv_cluster_start DIR [CONF...]: initdb + start a scratch cluster with the
#            extension preloaded; sets PGHOST/PGPORT for it.
# inv_cluster_stop DIR: stops it.
# inv_router_create N [SQL]: in that cluster, N partition databases and a
#            router database over them.
# inv_scratch_tree DIR: a copy of the checkout that the PostgreSQL user owns.
# inv_node_modules DIR: npm ci in DIR, the node packages of its package-lock.json.

INV_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# the server's programs: PG_CONFIG's, when it names a PostgreSQL of its own
INV_PGBIN=/usr/lib/postgresql/15/bin
[ -n "${PG_CONFIG:-}" ] && [ -x "$PG_CONFIG" ] && INV_PGBIN=$("$PG_CONFIG" --bindir)
INV_PACKAGES=(postgresql-15 postgresql-client-15 postgresql-server-dev-15
	postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl
	libipc-run-perl postgresql-15-plproxy postgresql-15-wal2json pgbouncer gdb make gcc
	prometheus-postgres-exporter prometheus pgbackrest python3 python3-psycopg)

inv_log() { printf '== %s\n' "$*" >&2; }
inv_die() { printf 'error: %s\n' "$*" >&2; exit 1; }

inv_missing_packages() {
	local p
	for p in "${INV_PACKAGES[@]}" "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			printf '%s\n' "$p"
	done
}

# inv_packages [EXTRA...]: make sure the Debian packages are installed.
inv_packages() {
	local missing
	missing=$(inv_missing_packages "$@" | tr '\n' ' ')
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		printf 'missing packages; install them with:\n  sudo apt-get install -y %s\n' "$missing" >&2
		exit 1
	fi
	inv_log "installing $missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null || inv_die "apt-get update failed"
	# shellcheck disable=SC2086
	apt-get install -y -qq $missing >/dev/null || inv_die "apt-get install $missing failed"
}

# The user that runs PostgreSQL: postgres when we are root, else ourselves.
inv_pg_user() {
	if [ "$(id -u)" -eq 0 ]; then echo postgres; else id -un; fi
}

inv_as_pg() {
	local vars=("PATH=$INV_PGBIN:$PATH") v
	for v in PGHOST PGPORT PGUSER PGDATABASE; do
		[ -n "${!v:-}" ] && vars+=("$v=${!v}")
	done
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- env "${vars[@]}" "$@"
	else
		env "${vars[@]}" "$@"
	fi
}

# Build (warnings are errors with INVENTORY_WERROR=1, as .ci/run sets), and
# install (root, or sudo without a password); otherwise say what to run.
# INV_MAKE_FLAGS, if set, are given to make: scripts/test.sh builds with
# INVENTORY_FAULTS=1 (src/fault.h).
inv_build_install() {
	inv_log "building the extension"
	# shellcheck disable=SC2086
	make -s -C "$INV_TOP" ${INV_MAKE_FLAGS:-} >/dev/null || inv_die "make failed"
	if [ "$(id -u)" -eq 0 ]; then
		make -s -C "$INV_TOP" ${INV_MAKE_FLAGS:-} install >/dev/null || inv_die "make install failed"
	elif sudo -n true 2>/dev/null; then
		sudo make -s -C "$INV_TOP" ${INV_MAKE_FLAGS:-} install >/dev/null || inv_die "make install failed"
	elif ! cmp -s "$INV_TOP/inventory.so" "$(pg_config --pkglibdir)/inventory.so"; then
		inv_die "the built extension is not installed; run: sudo make -C $INV_TOP install"
	fi
}

inv_setup() {
	inv_packages "$@"
	inv_build_install
}

# inv_scratch_tree DIR: a copy of the checkout in DIR/tree, owned by the
# PostgreSQL user, for suites that write next to their files.
inv_scratch_tree() {
	mkdir -p "$1/tree"
	tar -C "$INV_TOP" --exclude=.git --exclude='tmp_check*' --exclude=results \
		--exclude=output_iso --exclude=node_modules -cf - . | tar -C "$1/tree" -xf -
	[ "$(id -u)" -eq 0 ] && chown -R "$(inv_pg_user)" "$1"
	return 0
}

# inv_node_modules DIR: the node packages of DIR's package-lock.json, in
# DIR/node_modules, from npm's cache or else the npm registry (three tries).
# npm comes with NodeSource's nodejs; Debian packages it on its own.
inv_node_modules() {
	local try
	command -v npm >/dev/null || inv_packages npm
	for try in 1 2 3; do
		(cd "$1" && npm ci --no-audit --no-fund --prefer-offline) && return 0
		sleep $((try * 5))
	done
	return 1
}

# A free TCP port on loopback, from a range away from the default.
inv_free_port() {
	local port
	for port in $(seq 54400 54499); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	inv_die "no free port in 54400-54499"
}

# inv_cluster_start DIR [SETTING...]: a scratch cluster owned by the
# PostgreSQL user, listening on a free port and on a socket in DIR.
inv_cluster_start() {
	local dir=$1
	shift
	local port
	port=$(inv_free_port)
	mkdir -p "$dir"
	[ "$(id -u)" -eq 0 ] && chown "$(inv_pg_user)" "$dir"
	inv_as_pg initdb -D "$dir/data" -A trust -U postgres >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; inv_die "initdb failed"; }
	{
		echo "shared_preload_libraries = 'inventory'"
		echo "listen_addresses = '127.0.0.1'"
		echo "unix_socket_directories = '$dir'"
		echo "max_connections = 200"
		local s
		for s in "$@"; do echo "$s"; done
		echo "include_if_exists = 'port.conf'"
	} | inv_as_pg tee -a "$dir/data/postgresql.conf" >/dev/null
	# another server may take the free port before this one binds it: then
	# the next free port
	local try
	for try in 1 2 3 4 5; do
		echo "port = $port" | inv_as_pg tee "$dir/data/port.conf" >/dev/null
		inv_as_pg pg_ctl -D "$dir/data" -l "$dir/server.log" -w start >/dev/null && break
		grep -q 'Address already in use' "$dir/server.log" && [ "$try" -lt 5 ] ||
			{ cat "$dir/server.log" >&2; inv_die "the server did not start"; }
		port=$(inv_free_port)
	done
	export PGHOST=$dir PGPORT=$port PGUSER=postgres
}

inv_cluster_stop() {
	local dir=$1
	[ -d "$dir/data" ] && inv_as_pg pg_ctl -D "$dir/data" -m fast -w stop >/dev/null 2>&1
	return 0
}

# inv_router_create N [SQL]: in the cluster inv_cluster_start started, N
# partition databases inv_p0 .. inv_p<N-1> with the extension (each then
# running SQL, when given), and a router database shop with
# inventory_router whose cluster inventory_cluster reaches them, as the
# docs/scaling-out.md shows it.
inv_router_create() {
	local n=$1 sql=${2:-} p opts=
	for p in $(seq 0 $((n - 1))); do
		inv_as_pg createdb "inv_p$p" &&
			inv_as_pg psql -X -q -v ON_ERROR_STOP=1 -d "inv_p$p" -c 'CREATE EXTENSION inventory' \
				${sql:+-c "$sql"} >/dev/null ||
			inv_die "setting up partition $p failed"
		opts+="${opts:+, }p$p 'host=$PGHOST port=$PGPORT dbname=inv_p$p'"
	done
	inv_as_pg createdb shop || inv_die "createdb shop failed"
	inv_as_pg psql -X -q -v ON_ERROR_STOP=1 -d shop >/dev/null <<SQL || inv_die "setting up the router failed"
CREATE EXTENSION plproxy;
CREATE EXTENSION inventory_router;
CREATE SERVER inventory_cluster FOREIGN DATA WRAPPER plproxy OPTIONS ($opts);
CREATE USER MAPPING FOR PUBLIC SERVER inventory_cluster OPTIONS (user 'postgres');
SQL
}
