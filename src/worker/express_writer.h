/*
 * express_writer.h
 *	  The express lane's writer process.  See express_writer.c.
 */
#ifndef INVENTORY_EXPRESS_WRITER_H
#define INVENTORY_EXPRESS_WRITER_H

#include "postgres.h"

extern bool ExpressStartWriter(int lane);

#endif							/* INVENTORY_EXPRESS_WRITER_H */
