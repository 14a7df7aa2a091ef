#ifndef CRabbitMQ_SHIM_H
#define CRabbitMQ_SHIM_H
#include <amqp.h>
#include <amqp_tcp_socket.h>
#endif
