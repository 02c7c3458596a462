/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Topic tables of simulated brokers and their RegisterBrokerBody. The names
 * and queue counts follow what a 5.x broker's TopicConfigManager creates at
 * start, so routes and cluster info look like a real cluster's. Bodies are
 * written by the route module's encoders (include/nsrv/register_body.h), the
 * same code the server's decoder is tested against. Pure code.
 */
#include <errno.h>
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/register_body.h"
#include "bsim_int.h"

#define PERM_RW (NSRV_PERM_READ | NSRV_PERM_WRITE)
#define PERM_RWI (NSRV_PERM_READ | NSRV_PERM_WRITE | NSRV_PERM_INHERIT)

void nsrv__bsim_topics_add(nsrv_bsim_topics_t *t, const char *name, int32_t queues, int32_t perm) {
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 32;
        t->v = nsrv_realloc(t->v, t->cap * sizeof(*t->v));
    }
    nsrv_topic_config_t *c = &t->v[t->n++];
    c->topic_name = nsrv_strdup(name);
    c->read_queue_nums = queues;
    c->write_queue_nums = queues;
    c->perm = perm;
    c->topic_sys_flag = 0;
}

/*
 * The system topics of a 5.x broker with default BrokerConfig
 * (TopicConfigManager's constructor): auto-create, benchmark, cluster and
 * broker-name topics, schedule, transactions, revive, reply and member-sync.
 * Queue counts are those defaults (e.g. 18 delay levels for SCHEDULE_TOPIC).
 */
static void add_system_topics(nsrv_bsim_topics_t *t, const char *cluster, const char *broker) {
    char name[2 * NSRV_BSIM_NAME_MAX];
    nsrv__bsim_topics_add(t, "SELF_TEST_TOPIC", 1, PERM_RW);
    nsrv__bsim_topics_add(t, "TBW102", 8, PERM_RWI);
    nsrv__bsim_topics_add(t, "BenchmarkTest", 1024, PERM_RW);
    nsrv__bsim_topics_add(t, cluster, 16, PERM_RWI);
    nsrv__bsim_topics_add(t, broker, 1, PERM_RWI);
    nsrv__bsim_topics_add(t, "OFFSET_MOVED_EVENT", 1, PERM_RW);
    nsrv__bsim_topics_add(t, "SCHEDULE_TOPIC_XXXX", 18, PERM_RW);
    nsrv__bsim_topics_add(t, "RMQ_SYS_TRANS_HALF_TOPIC", 1, PERM_RW);
    nsrv__bsim_topics_add(t, "RMQ_SYS_TRANS_OP_HALF_TOPIC", 1, PERM_RW);
    nsrv__bsim_topics_add(t, "rmq_sys_wheel_timer", 1, PERM_RW);
    snprintf(name, sizeof(name), "%s_REPLY_TOPIC", cluster);
    nsrv__bsim_topics_add(t, name, 1, PERM_RWI);
    snprintf(name, sizeof(name), "rmq_sys_REVIVE_LOG_%s", cluster);
    nsrv__bsim_topics_add(t, name, 8, PERM_RW);
    snprintf(name, sizeof(name), "rmq_sys_SYNC_BROKER_MEMBER_%s", broker);
    nsrv__bsim_topics_add(t, name, 1, NSRV_PERM_INHERIT);
}

int nsrv__bsim_topics_build(nsrv_bsim_topics_t *t, const nsrv_bsim_opts_t *o,
                            const char *broker_name) {
    char name[2 * NSRV_BSIM_NAME_MAX];
    memset(t, 0, sizeof(*t));
    if (!nsrv__bsim_name_ok(broker_name, strlen(broker_name)))
        return -EINVAL;
    int32_t q = (int32_t)o->queues;
    if (o->sys_topics)
        add_system_topics(t, o->cluster, broker_name);
    for (uint32_t j = 0; j < o->n_shared; j++) {
        snprintf(name, sizeof(name), "shared-topic-%u", j);
        nsrv__bsim_topics_add(t, name, q, PERM_RW);
    }
    for (uint32_t i = 0; i < o->n_topics; i++) {
        snprintf(name, sizeof(name), "topic-%s-%u", broker_name, i);
        nsrv__bsim_topics_add(t, name, q, PERM_RW);
    }
    return 0;
}

void nsrv__bsim_topics_bump(nsrv_bsim_topics_t *t, const char *broker_name, int32_t queues) {
    char name[2 * NSRV_BSIM_NAME_MAX];
    t->n_bumps++;
    snprintf(name, sizeof(name), "topic-%s-bump%u", broker_name, t->n_bumps);
    nsrv__bsim_topics_add(t, name, queues, PERM_RW);
}

void nsrv__bsim_topics_deinit(nsrv_bsim_topics_t *t) {
    for (size_t i = 0; i < t->n; i++)
        nsrv_free((void *)t->v[i].topic_name);
    nsrv_free(t->v);
    memset(t, 0, sizeof(*t));
}

int nsrv__bsim_topics_encode(const nsrv_bsim_topics_t *t, const nsrv_data_version_t *dv,
                             bool compressed, int32_t version, nsrv_buf_t *out) {
    nsrv_register_body_t b;
    memset(&b, 0, sizeof(b));
    b.data_version = *dv;
    b.topics = t->v;
    b.n_topics = t->n;
    /* A broker always sends "filterServerList":[] (proto/requests.md §2.5.1). */
    b.has_filter_servers = true;
    if (compressed)
        return nsrv_register_body_encode_compressed(&b, version, out);
    nsrv_register_body_encode_json(&b, out);
    return 0;
}
