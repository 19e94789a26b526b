/*
 * launcher.h
 *	  The launcher that sends the pool's workers where work is due.
 */
#ifndef INVENTORY_LAUNCHER_H
#define INVENTORY_LAUNCHER_H

extern void LauncherRegister(void);

#endif							/* INVENTORY_LAUNCHER_H */
