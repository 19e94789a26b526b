/*
 * setting.h
 *	  Settings a database has, that no session, role or client may
 *	  override.  See setting.c.
 */
#ifndef INVENTORY_SETTING_H
#define INVENTORY_SETTING_H

#include "postgres.h"

#include "utils/guc.h"

extern bool SettingOfDatabase(const char *name, bool newval, GucSource source,
							  const char *why);

#endif							/* INVENTORY_SETTING_H */
