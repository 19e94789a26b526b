/* inventory_router--0.2--0.3.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION inventory_router UPDATE TO '0.3'" to load this file. \quit

-- A movement's answer counts its own units, as the node's 0.3 answers it.
COMMENT ON COLUMN inventory.result.available IS
	'units available on the SKU''s node once the call commits there, if nothing else commits meanwhile (the node''s count, holds in flight taken out); NULL when the SKU does not exist';
