package nsrvd.compat;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * The Java producer/consumer of the compatibility suite, built once against rocketmq-client
 * 5.3.3 and once against 4.9.7 (same source). Every route it uses comes from the NameServer
 * given with --ns, so a pass proves that the client works with that NameServer.
 *
 * <pre>
 * produce --ns A --topic T --count N [--group G] [--ordered] [--api-timeout MS]
 *     sends N messages synchronously; prints "PRODUCE ok=.. failed=.. brokers={..}"
 * consume --ns A --topic T --count N --group G [--timeout S] [--api-timeout MS]
 *     push consumer from the first offset until N distinct bodies arrived;
 *     prints "CONSUME distinct=.. total=.."
 * pulse --ns A --topic T --interval MS --duration S [--poll MS]
 *     one message every interval; one line per send: "PULSE epochMillis OK brokerName" or
 *     "PULSE epochMillis FAIL reason"; --poll is the route polling period
 * stream-produce --ns A --topic T --interval MS --duration S [--poll MS]
 *     message "s-i" every interval (i = 0, 1, ...); "ACK i" once the broker stored it,
 *     "NACK i reason" otherwise (the chaos suite counts them against what arrives)
 * stream-consume --ns A --topic T --group G --duration S [--poll MS]
 *     push consumer from the first offset; "RECV body" for every delivery (duplicates too)
 * routepoll --ns A --topic T --interval MS --duration S
 *     asks the NameServers for the route of T through the client's own remoting layer (which
 *     picks a NameServer and moves on after a failure, and in 5.x follows GO_AWAY) every
 *     interval; "FAIL epochMillis reason" per failed request, "ROUTEPOLL ok=.. failed=.." every
 *     second and at the end
 * </pre>
 *
 * The process exits with System.exit without shutting the client down: the client's
 * shutdown waits seconds for its event thread, and nothing here needs it.
 */
public final class CompatClient {
    private CompatClient() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            usage();
        }
        Map<String, String> opt = parse(args);
        String cmd = args[0];
        int rc;
        if ("produce".equals(cmd)) {
            rc = produce(opt);
        } else if ("consume".equals(cmd)) {
            rc = consume(opt);
        } else if ("pulse".equals(cmd)) {
            rc = pulse(opt);
        } else if ("stream-produce".equals(cmd)) {
            rc = streamProduce(opt);
        } else if ("stream-consume".equals(cmd)) {
            rc = streamConsume(opt);
        } else if ("routepoll".equals(cmd)) {
            rc = routePoll(opt);
        } else {
            usage();
            rc = 2;
        }
        System.out.flush();
        System.exit(rc);
    }

    private static void usage() {
        System.err.println("usage: CompatClient produce|consume|pulse --ns ADDR --topic T ...");
        System.exit(2);
    }

    private static Map<String, String> parse(String[] args) {
        Map<String, String> m = new HashMap<String, String>();
        for (int i = 1; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--")) {
                throw new IllegalArgumentException("bad argument " + a);
            }
            String key = a.substring(2);
            if (i + 1 < args.length && !args[i + 1].startsWith("--")) {
                m.put(key, args[++i]);
            } else {
                m.put(key, "true");
            }
        }
        return m;
    }

    private static String need(Map<String, String> opt, String key) {
        String v = opt.get(key);
        if (v == null) {
            throw new IllegalArgumentException("missing --" + key);
        }
        return v;
    }

    private static int num(Map<String, String> opt, String key, int dflt) {
        String v = opt.get(key);
        return v == null ? dflt : Integer.parseInt(v);
    }

    /**
     * --ns ADDR sets the NameServer list; without it (stream-produce / stream-consume in the
     * docker demo) the client asks the address service named by -Drocketmq.namesrv.domain, as
     * a client with no namesrvAddr does.
     */
    private static void setNamesrv(org.apache.rocketmq.client.ClientConfig c, Map<String, String> opt) {
        if (opt.containsKey("ns")) {
            c.setNamesrvAddr(opt.get("ns"));
        }
    }

    private static DefaultMQProducer startProducer(Map<String, String> opt) throws Exception {
        String group = opt.containsKey("group") ? opt.get("group") : "PG_" + need(opt, "topic");
        DefaultMQProducer p = new DefaultMQProducer(group);
        setNamesrv(p, opt);
        p.setInstanceName("compat-" + System.nanoTime());
        p.setSendMsgTimeout(num(opt, "send-timeout", 6000));
        p.setRetryTimesWhenSendFailed(2);
        p.setPollNameServerInterval(num(opt, "poll", 30000));
        p.setMqClientApiTimeout(num(opt, "api-timeout", p.getMqClientApiTimeout()));
        p.start();
        return p;
    }

    /**
     * The client API timeout (route queries, heartbeats) of produce and consume. The client's
     * default, 3 s, counts the connection set-up too: a JVM just started beside ten others on a
     * two-core test box has spent 0.5 s between connect and its handler and then missed a route
     * reply within 3 s, with the Java NameServer and with nsrvd alike, and a 5.3.3 push consumer
     * whose first route query fails does not start. A route that never comes still fails at 10 s.
     */
    private static final int API_TIMEOUT_LOADED = 10000;

    private static int produce(Map<String, String> opt) throws Exception {
        opt.putIfAbsent("api-timeout", String.valueOf(API_TIMEOUT_LOADED));
        final String topic = need(opt, "topic");
        int count = num(opt, "count", 1000);
        boolean ordered = opt.containsKey("ordered");
        String prefix = opt.containsKey("prefix") ? opt.get("prefix") : "m";
        DefaultMQProducer p = startProducer(opt);
        int ok = 0;
        int failed = 0;
        String firstError = null;
        Map<String, Integer> perBroker = new TreeMap<String, Integer>();
        Map<String, Integer> perQueue = new TreeMap<String, Integer>();
        MessageQueueSelector byArg = new MessageQueueSelector() {
            @Override
            public MessageQueue select(List<MessageQueue> mqs, Message msg, Object arg) {
                return mqs.get((Integer) arg % mqs.size());
            }
        };
        int retries = 0;
        for (int i = 0; i < count; i++) {
            Message m = new Message(topic, "TagA", String.valueOf(i), (prefix + "-" + i).getBytes("UTF-8"));
            // A send that times out on a loaded two-core test box is retried (up to 3 attempts)
            // like an application would; the retries are reported. The client's own retries
            // only cover other brokers, not a slow one.
            boolean sent = false;
            for (int attempt = 0; attempt < 3 && !sent; attempt++) {
                if (attempt > 0) {
                    retries++;
                }
                try {
                    SendResult r = ordered ? p.send(m, byArg, Integer.valueOf(i)) : p.send(m);
                    if (r.getSendStatus() == SendStatus.SEND_OK) {
                        sent = true;
                        String b = r.getMessageQueue().getBrokerName();
                        perBroker.put(b, perBroker.containsKey(b) ? perBroker.get(b) + 1 : 1);
                        String q = b + ":" + r.getMessageQueue().getQueueId();
                        perQueue.put(q, perQueue.containsKey(q) ? perQueue.get(q) + 1 : 1);
                    } else if (firstError == null) {
                        firstError = String.valueOf(r.getSendStatus());
                    }
                } catch (Exception e) {
                    if (firstError == null) {
                        firstError = oneLine(e);
                    }
                }
            }
            if (sent) {
                ok++;
            } else {
                failed++;
            }
        }
        System.out.println("PRODUCE ok=" + ok + " failed=" + failed + " brokers=" + perBroker + " queues=" + perQueue
            + " retries=" + retries);
        if (firstError != null) {
            System.out.println("FIRST_ERROR " + firstError);
        }
        return failed == 0 && ok == count ? 0 : 1;
    }

    private static int consume(Map<String, String> opt) throws Exception {
        String topic = need(opt, "topic");
        final int count = num(opt, "count", 1000);
        int timeout = num(opt, "timeout", 120);
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(need(opt, "group"));
        c.setNamesrvAddr(need(opt, "ns"));
        c.setMqClientApiTimeout(num(opt, "api-timeout", API_TIMEOUT_LOADED));
        c.setInstanceName("compat-" + System.nanoTime());
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPollNameServerInterval(num(opt, "poll", 30000));
        c.subscribe(topic, "*");
        final Set<String> seen = ConcurrentHashMap.newKeySet();
        final Map<String, Integer> perBroker = new ConcurrentHashMap<String, Integer>();
        final int[] total = new int[1];
        final CountDownLatch done = new CountDownLatch(1);
        c.registerMessageListener(new MessageListenerConcurrently() {
            @Override
            public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs,
                org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext ctx) {
                for (MessageExt m : msgs) {
                    synchronized (total) {
                        total[0]++;
                    }
                    seen.add(new String(m.getBody()));
                    String b = String.valueOf(m.getStoreHost()).replaceFirst("^.*/", "");
                    perBroker.merge(b, 1, Integer::sum);
                }
                if (seen.size() >= count) {
                    done.countDown();
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            }
        });
        c.start();
        boolean all = done.await(timeout, TimeUnit.SECONDS);
        synchronized (total) {
            System.out.println("CONSUME distinct=" + seen.size() + " total=" + total[0] + " brokers="
                + new TreeMap<String, Integer>(perBroker));
        }
        return all ? 0 : 1;
    }

    private static int pulse(Map<String, String> opt) throws Exception {
        String topic = need(opt, "topic");
        int interval = num(opt, "interval", 200);
        long until = System.currentTimeMillis() + 1000L * num(opt, "duration", 60);
        DefaultMQProducer p = startProducer(opt);
        int i = 0;
        while (System.currentTimeMillis() < until) {
            long t = System.currentTimeMillis();
            Message m = new Message(topic, "TagA", ("p-" + i++).getBytes("UTF-8"));
            try {
                SendResult r = p.send(m);
                System.out.println("PULSE " + t + (r.getSendStatus() == SendStatus.SEND_OK ? " OK " : " NOTOK ")
                    + r.getMessageQueue().getBrokerName());
            } catch (Exception e) {
                System.out.println("PULSE " + t + " FAIL " + oneLine(e));
            }
            System.out.flush();
            long sleep = interval - (System.currentTimeMillis() - t);
            if (sleep > 0) {
                Thread.sleep(sleep);
            }
        }
        return 0;
    }

    private static int streamProduce(Map<String, String> opt) throws Exception {
        String topic = need(opt, "topic");
        int interval = num(opt, "interval", 50);
        long until = System.currentTimeMillis() + 1000L * num(opt, "duration", 600);
        DefaultMQProducer p = startProducer(opt);
        System.out.println("READY");
        System.out.flush();
        for (int i = 0; System.currentTimeMillis() < until; i++) {
            long t = System.currentTimeMillis();
            Message m = new Message(topic, "TagA", ("s-" + i).getBytes("UTF-8"));
            try {
                SendResult r = p.send(m);
                System.out.println((r.getSendStatus() == SendStatus.SEND_OK ? "ACK " : "NACK ") + i
                    + (r.getSendStatus() == SendStatus.SEND_OK ? "" : " " + r.getSendStatus()));
            } catch (Exception e) {
                System.out.println("NACK " + i + " " + oneLine(e));
            }
            System.out.flush();
            long sleep = interval - (System.currentTimeMillis() - t);
            if (sleep > 0) {
                Thread.sleep(sleep);
            }
        }
        return 0;
    }

    private static int streamConsume(Map<String, String> opt) throws Exception {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(need(opt, "group"));
        setNamesrv(c, opt);
        c.setInstanceName("chaos-" + System.nanoTime());
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPollNameServerInterval(num(opt, "poll", 30000));
        c.subscribe(need(opt, "topic"), "*");
        c.registerMessageListener(new MessageListenerConcurrently() {
            @Override
            public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs,
                org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext ctx) {
                synchronized (System.out) {
                    for (MessageExt m : msgs) {
                        System.out.println("RECV " + new String(m.getBody()));
                    }
                    System.out.flush();
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            }
        });
        c.start();
        System.out.println("READY");
        System.out.flush();
        Thread.sleep(1000L * num(opt, "duration", 600));
        return 0;
    }

    private static int routePoll(Map<String, String> opt) throws Exception {
        String topic = need(opt, "topic");
        int interval = num(opt, "interval", 10);
        long until = System.currentTimeMillis() + 1000L * num(opt, "duration", 60);
        DefaultMQProducer p = startProducer(opt);
        // The client factory's getter is getmQClientFactory in 4.x and getMqClientFactory in 5.x.
        Object impl = p.getDefaultMQProducerImpl();
        java.lang.reflect.Method getter;
        try {
            getter = impl.getClass().getMethod("getMqClientFactory");
        } catch (NoSuchMethodException e) {
            getter = impl.getClass().getMethod("getmQClientFactory");
        }
        org.apache.rocketmq.client.impl.factory.MQClientInstance f =
            (org.apache.rocketmq.client.impl.factory.MQClientInstance) getter.invoke(impl);
        org.apache.rocketmq.client.impl.MQClientAPIImpl api = f.getMQClientAPIImpl();
        System.out.println("READY");
        System.out.flush();
        int ok = 0;
        int failed = 0;
        long report = System.currentTimeMillis() + 1000;
        while (System.currentTimeMillis() < until) {
            long t = System.currentTimeMillis();
            if (t >= report) {
                System.out.println("ROUTEPOLL ok=" + ok + " failed=" + failed);
                System.out.flush();
                report = t + 1000;
            }
            try {
                api.getTopicRouteInfoFromNameServer(topic, 3000);
                ok++;
            } catch (Exception e) {
                failed++;
                System.out.println("FAIL " + t + " " + oneLine(e));
                System.out.flush();
            }
            long sleep = interval - (System.currentTimeMillis() - t);
            if (sleep > 0) {
                Thread.sleep(sleep);
            }
        }
        System.out.println("ROUTEPOLL ok=" + ok + " failed=" + failed);
        return 0;
    }

    private static String oneLine(Throwable e) {
        String s = e.getClass().getSimpleName() + ": " + e.getMessage();
        s = s.replace('\n', ' ').replace('\r', ' ');
        return s.length() > 300 ? s.substring(0, 300) : s;
    }
}
