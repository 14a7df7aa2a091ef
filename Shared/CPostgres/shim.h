// libpq, PostgreSQL's client library (Debian's libpq-dev); only GrocerPostgres imports it.
#include <libpq-fe.h>
