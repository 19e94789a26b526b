/* inventory--0.2--0.3.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION inventory UPDATE TO '0.3'" to load this file. \quit

------------------------------------------------------------------------------
-- A movement's answer counts its own units
--
-- The available units a call answers are those that will be available once
-- the caller's transaction commits: a restock of 10 units of a new SKU
-- answers 10 (it answered 0, the live count at the call, in which the
-- restock's own units are not on sale until it commits).
------------------------------------------------------------------------------

COMMENT ON COLUMN inventory.result.available IS
	'units available once the caller''s transaction commits, if nothing else commits meanwhile: the live count from shared memory (holds in flight taken out) plus what the transaction itself adds; NULL when the SKU does not exist';
