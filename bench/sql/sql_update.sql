UPDATE stock SET qty = qty - 1 WHERE sku = :sku AND qty >= 1;
