/*
 * api.h
 *	  Entry points shared by the SQL API and the background worker.
 */
#ifndef INVENTORY_API_H
#define INVENTORY_API_H

#include "postgres.h"

extern int64 ExpireOverdue(int64 max_rows);

#endif							/* INVENTORY_API_H */
