-- Expiry on demand, by the administrator (shop_admin), racing the worker
-- and the buyers who confirm.
SELECT inventory.expire();
