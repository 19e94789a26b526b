/*
 * utility.h
 *	  The statements the extension reacts to, in every backend.
 */
#ifndef INVENTORY_UTILITY_H
#define INVENTORY_UTILITY_H

extern void UtilityInit(void);

#endif							/* INVENTORY_UTILITY_H */
