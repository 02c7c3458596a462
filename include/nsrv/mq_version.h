/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RocketMQ client versions: the `version` field of a request header is the
 * ordinal of the sender's MQVersion.Version enum. These are the versions at
 * which what nsrvd reads or writes changes; every threshold in the code base
 * names one of them, so this is the one place the numbers are written.
 */
#pragma once

/* REGISTER_BROKER: below this, a JSON body is a bare TopicConfigSerializeWrapper. */
#define NSRV_MQ_V3_0_11 37
/* GET_ROUTEINFO_BY_TOPIC: at or above this, the route is standard JSON. */
#define NSRV_MQ_V4_9_4 401
/* CURRENT_VERSION of the 4.9.7 release (tests of 4.x brokers use it). */
#define NSRV_MQ_V4_9_7 407
/* Compressed RegisterBrokerBody: at or above this, it carries a topic-queue-mapping section. */
#define NSRV_MQ_V5_0_0 413
/* CURRENT_VERSION of the 5.x line nsrvd follows. */
#define NSRV_MQ_V5_3_3 479

/* The version nsrvd stamps on its responses, and the one its tools send. */
#define NSRV_MQ_CURRENT NSRV_MQ_V5_3_3
