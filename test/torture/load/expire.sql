-- Expiry on demand, racing the worker and the buyers who confirm.
SELECT inventory.expire();
