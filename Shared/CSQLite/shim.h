#ifndef CSQLite_SHIM_H
#define CSQLite_SHIM_H
#include <sqlite3.h>

/// `SQLITE_TRANSIENT` is a cast macro (`(sqlite3_destructor_type)-1`) that Swift cannot import:
/// this returns it so bindings can ask SQLite to copy the bytes before the call returns.
static inline sqlite3_destructor_type grocer_sqlite_transient(void) { return SQLITE_TRANSIENT; }

/// `SQLITE_STATIC` for symmetry: the bytes outlive the statement's use of them.
static inline sqlite3_destructor_type grocer_sqlite_static(void) { return SQLITE_STATIC; }

#endif
