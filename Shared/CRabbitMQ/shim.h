#ifndef CRabbitMQ_SHIM_H
#define CRabbitMQ_SHIM_H
#include <amqp.h>
#include <amqp_framing.h>
#include <amqp_tcp_socket.h>
#include <poll.h>
#include <sys/eventfd.h>

// Swift cannot call variadic C functions nor import cast macros: these helpers expose them.

/// `amqp_login_with_properties` with PLAIN authentication.
static inline amqp_rpc_reply_t grocer_amqp_login_plain(amqp_connection_state_t state, const char *vhost,
                                                       int channel_max, int frame_max, int heartbeat,
                                                       const amqp_table_t *properties,
                                                       const char *user, const char *password) {
  return amqp_login_with_properties(state, vhost, channel_max, frame_max, heartbeat, properties,
                                    AMQP_SASL_METHOD_PLAIN, user, password);
}

static const amqp_method_number_t GROCER_AMQP_BASIC_ACK = AMQP_BASIC_ACK_METHOD;
static const amqp_method_number_t GROCER_AMQP_BASIC_NACK = AMQP_BASIC_NACK_METHOD;
static const amqp_method_number_t GROCER_AMQP_BASIC_RETURN = AMQP_BASIC_RETURN_METHOD;
static const amqp_method_number_t GROCER_AMQP_BASIC_DELIVER = AMQP_BASIC_DELIVER_METHOD;
static const amqp_method_number_t GROCER_AMQP_BASIC_CANCEL = AMQP_BASIC_CANCEL_METHOD;
static const amqp_method_number_t GROCER_AMQP_CHANNEL_CLOSE = AMQP_CHANNEL_CLOSE_METHOD;
static const amqp_method_number_t GROCER_AMQP_CHANNEL_CLOSE_OK = AMQP_CHANNEL_CLOSE_OK_METHOD;
static const amqp_method_number_t GROCER_AMQP_CONNECTION_CLOSE = AMQP_CONNECTION_CLOSE_METHOD;
static const amqp_method_number_t GROCER_AMQP_CONNECTION_BLOCKED = AMQP_CONNECTION_BLOCKED_METHOD;
static const amqp_method_number_t GROCER_AMQP_CONNECTION_UNBLOCKED = AMQP_CONNECTION_UNBLOCKED_METHOD;

static const amqp_flags_t GROCER_AMQP_FLAG_CONTENT_TYPE = AMQP_BASIC_CONTENT_TYPE_FLAG;
static const amqp_flags_t GROCER_AMQP_FLAG_HEADERS = AMQP_BASIC_HEADERS_FLAG;
static const amqp_flags_t GROCER_AMQP_FLAG_DELIVERY_MODE = AMQP_BASIC_DELIVERY_MODE_FLAG;
static const amqp_flags_t GROCER_AMQP_FLAG_CORRELATION_ID = AMQP_BASIC_CORRELATION_ID_FLAG;
static const amqp_flags_t GROCER_AMQP_FLAG_REPLY_TO = AMQP_BASIC_REPLY_TO_FLAG;
static const amqp_flags_t GROCER_AMQP_FLAG_EXPIRATION = AMQP_BASIC_EXPIRATION_FLAG;
static const amqp_flags_t GROCER_AMQP_FLAG_MESSAGE_ID = AMQP_BASIC_MESSAGE_ID_FLAG;
static const amqp_flags_t GROCER_AMQP_FLAG_TIMESTAMP = AMQP_BASIC_TIMESTAMP_FLAG;
static const amqp_flags_t GROCER_AMQP_FLAG_TYPE = AMQP_BASIC_TYPE_FLAG;

/// The union member of a field value, by kind, widened to int64 (0 for non-integer kinds).
static inline int64_t grocer_amqp_field_integer(const amqp_field_value_t *value, int *ok) {
  *ok = 1;
  switch (value->kind) {
    case AMQP_FIELD_KIND_I8: return value->value.i8;
    case AMQP_FIELD_KIND_U8: return value->value.u8;
    case AMQP_FIELD_KIND_I16: return value->value.i16;
    case AMQP_FIELD_KIND_U16: return value->value.u16;
    case AMQP_FIELD_KIND_I32: return value->value.i32;
    case AMQP_FIELD_KIND_U32: return value->value.u32;
    case AMQP_FIELD_KIND_I64: return value->value.i64;
    case AMQP_FIELD_KIND_U64: return (int64_t)value->value.u64;
    default: *ok = 0; return 0;
  }
}

/// A field value holding UTF-8 bytes (the caller keeps the bytes alive).
static inline amqp_field_value_t grocer_amqp_utf8_value(amqp_bytes_t bytes) {
  amqp_field_value_t value;
  value.kind = AMQP_FIELD_KIND_UTF8;
  value.value.bytes = bytes;
  return value;
}

/// A field value holding a signed 64-bit integer.
static inline amqp_field_value_t grocer_amqp_i64_value(int64_t number) {
  amqp_field_value_t value;
  value.kind = AMQP_FIELD_KIND_I64;
  value.value.i64 = number;
  return value;
}

/// A field value holding a 32-bit integer (RabbitMQ reads `x-delivery-limit` from any integer).
static inline amqp_field_value_t grocer_amqp_i32_value(int32_t number) {
  amqp_field_value_t value;
  value.kind = AMQP_FIELD_KIND_I32;
  value.value.i32 = number;
  return value;
}

static inline int grocer_amqp_field_is_bytes(const amqp_field_value_t *value) {
  return value->kind == AMQP_FIELD_KIND_UTF8 || value->kind == AMQP_FIELD_KIND_BYTES;
}
#endif
