#ifndef CMicroHTTPD_SHIM_H
#define CMicroHTTPD_SHIM_H
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdarg.h>
#include <string.h>
#include <microhttpd.h>

/// Signature of MHD_OPTION_URI_LOG_CALLBACK: sees the raw request target before MHD decodes it;
/// its return value becomes the request's initial `*req_cls`.
typedef void *(*grocer_mhd_uri_log_callback)(void *cls, const char *uri,
                                             struct MHD_Connection *connection);

/// MHD_OPTION_UNESCAPE_CALLBACK that leaves the text as it is. The server reads the raw target
/// (from the URI log callback) and decodes the path and query itself, so MHD's own decoding of
/// the path and of every query argument was work nobody read (about 1% of a stock lookup).
static inline size_t grocer_mhd_keep_escaped(void *cls, struct MHD_Connection *connection, char *text) {
  (void)cls;
  (void)connection;
  return strlen(text);
}

/// Starts a daemon without Swift touching MHD's variadic API: the four callbacks are passed
/// explicitly, everything else goes through an MHD_OPTION_ARRAY terminated by MHD_OPTION_END.
static inline struct MHD_Daemon *grocer_mhd_start_daemon(
    unsigned int flags, uint16_t port, MHD_AccessHandlerCallback access, void *cls,
    MHD_RequestCompletedCallback completed, grocer_mhd_uri_log_callback uri_log,
    MHD_NotifyConnectionCallback notify_connection, const struct MHD_OptionItem *options) {
  return MHD_start_daemon(flags, port, NULL, NULL, access, cls,
                          MHD_OPTION_NOTIFY_COMPLETED, completed, cls,
                          MHD_OPTION_URI_LOG_CALLBACK, uri_log, cls,
                          MHD_OPTION_NOTIFY_CONNECTION, notify_connection, cls,
                          MHD_OPTION_UNESCAPE_CALLBACK, grocer_mhd_keep_escaped, NULL,
                          MHD_OPTION_ARRAY, options,
                          MHD_OPTION_END);
}

/// The connection's socket, or -1 (MHD_get_connection_info is variadic).
static inline int grocer_mhd_connection_fd(struct MHD_Connection *connection) {
  const union MHD_ConnectionInfo *info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
  return info == NULL ? -1 : info->connect_fd;
}

/// What the MHD_OPTION_NOTIFY_CONNECTION callback stored for this TCP connection, or NULL.
static inline void *grocer_mhd_socket_context(struct MHD_Connection *connection) {
  const union MHD_ConnectionInfo *info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info == NULL ? NULL : info->socket_context;
}

int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags);

/// accept4 with SOCK_NONBLOCK | SOCK_CLOEXEC (glibc declares accept4 only under _GNU_SOURCE).
static inline int grocer_accept(int fd, struct sockaddr *address, socklen_t *length) {
  return accept4(fd, address, length, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

/// The daemon serving the connection, or NULL.
static inline struct MHD_Daemon *grocer_mhd_connection_daemon(struct MHD_Connection *connection) {
  const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_DAEMON);
  return info == NULL ? NULL : info->daemon;
}

#endif
