package nsrvd.demo;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

/**
 * The compose cluster's RocketMQ 5 client pair on the real gRPC client (rocketmq-client-java),
 * which reaches the cluster only through the Proxy: the Proxy takes the routes from the nsrvd
 * nodes. Runs until killed.
 *
 * <pre>
 *   produce --endpoints HOST:PORT --topic T [--interval MS]
 *       sends "g-i" (i = 0, 1, ...) every interval; prints "ACK i MSGID" once the broker stored
 *       it, "NACK i REASON" when the send failed (the message is not sent again)
 *   consume --endpoints HOST:PORT --topic T --group G
 *       a SimpleConsumer (pop: the broker needs timerWheelEnable=true) receiving and acking;
 *       prints "RECV g-i MSGID" per message received
 * </pre>
 *
 * Every 50 lines a summary, in the format of the remoting client pair (client-entrypoint.sh):
 * "STATS sent=.. acked=.. nacked=.." and "STATS received=.. distinct=.. duplicates=..".
 * Building the producer or the consumer asks the Proxy for the topic's route; while the Proxy
 * is not up yet, or no broker serves the topic yet, it is retried (for --start-timeout s, 600)
 * with the client's error printed, so the start order needs no sleep.
 */
public final class GrpcClient {
    private static final int EVERY = 50;

    private GrpcClient() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            usage();
        }
        Map<String, String> opt = options(args);
        String endpoints = need(opt, "endpoints");
        ClientConfiguration conf = ClientConfiguration.newBuilder()
                .setEndpoints(endpoints)
                .enableSsl(false)
                .setRequestTimeout(Duration.ofSeconds(num(opt, "request-timeout", 5)))
                .build();
        long startDeadline = System.nanoTime() + num(opt, "start-timeout", 600) * 1_000_000_000L;
        if ("produce".equals(args[0])) {
            produce(conf, need(opt, "topic"), num(opt, "interval", 100), startDeadline);
        } else if ("consume".equals(args[0])) {
            consume(conf, need(opt, "topic"), need(opt, "group"), startDeadline);
        } else {
            usage();
        }
    }

    private static void produce(ClientConfiguration conf, String topic, int intervalMs, long startDeadline)
            throws Exception {
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        Producer producer = null;
        while (producer == null) {
            try {
                producer = provider.newProducerBuilder().setClientConfiguration(conf).setTopics(topic).build();
            } catch (Exception e) {
                waitOrGiveUp("producer", e, startDeadline);
            }
        }
        System.out.println("producer started: topic " + topic + " through " + conf.getEndpoints());
        long acked = 0;
        long nacked = 0;
        for (long i = 0;; i++) {
            Message m = provider.newMessageBuilder()
                    .setTopic(topic)
                    .setTag("TagA")
                    .setKeys(String.valueOf(i))
                    .setBody(("g-" + i).getBytes(StandardCharsets.UTF_8))
                    .build();
            try {
                SendReceipt r = producer.send(m);
                acked++;
                System.out.println("ACK " + i + " " + r.getMessageId());
            } catch (Exception e) {
                nacked++;
                System.out.println("NACK " + i + " " + oneLine(e));
            }
            if ((i + 1) % EVERY == 0) {
                System.out.printf("STATS sent=%d acked=%d nacked=%d%n", i + 1, acked, nacked);
            }
            System.out.flush();
            Thread.sleep(intervalMs);
        }
    }

    private static void consume(ClientConfiguration conf, String topic, String group, long startDeadline)
            throws Exception {
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        FilterExpression all = new FilterExpression("*", FilterExpressionType.TAG);
        SimpleConsumer consumer = null;
        while (consumer == null) {
            try {
                consumer = provider.newSimpleConsumerBuilder()
                        .setClientConfiguration(conf)
                        .setConsumerGroup(group)
                        .setAwaitDuration(Duration.ofSeconds(10))
                        .setSubscriptionExpressions(Collections.singletonMap(topic, all))
                        .build();
            } catch (Exception e) {
                waitOrGiveUp("consumer", e, startDeadline);
            }
        }
        System.out.println("consumer started: topic " + topic + ", group " + group + " through " + conf.getEndpoints());
        Set<String> seen = new HashSet<>();
        long received = 0;
        while (true) {
            List<MessageView> batch;
            try {
                batch = consumer.receive(16, Duration.ofSeconds(30));
            } catch (Exception e) {
                System.out.println("RECEIVE-ERROR " + oneLine(e));
                System.out.flush();
                Thread.sleep(1000);
                continue;
            }
            for (MessageView mv : batch) {
                String body = StandardCharsets.UTF_8.decode(mv.getBody()).toString();
                try {
                    consumer.ack(mv);
                } catch (Exception e) {
                    // not acked: the broker delivers it again after the invisible time
                    System.out.println("ACK-ERROR " + body + " " + oneLine(e));
                    continue;
                }
                received++;
                seen.add(body);
                System.out.println("RECV " + body + " " + mv.getMessageId());
                if (received % EVERY == 0) {
                    System.out.printf("STATS received=%d distinct=%d duplicates=%d%n", received, seen.size(),
                            received - seen.size());
                }
            }
            System.out.flush();
        }
    }

    private static void waitOrGiveUp(String what, Exception e, long deadline) throws Exception {
        if (System.nanoTime() > deadline) {
            System.out.println(what + " could not start: " + oneLine(e));
            System.exit(1);
        }
        System.out.println(what + " not started yet (retrying): " + oneLine(e));
        System.out.flush();
        Thread.sleep(2000);
    }

    private static String oneLine(Throwable e) {
        StringBuilder s = new StringBuilder(e.toString());
        for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
            s.append(" <- ").append(c);
        }
        return s.toString().replace('\n', ' ');
    }

    private static Map<String, String> options(String[] args) {
        Map<String, String> m = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                usage();
            }
            m.put(args[i].substring(2), args[++i]);
        }
        return m;
    }

    private static String need(Map<String, String> opt, String key) {
        String v = opt.get(key);
        if (v == null || v.isEmpty()) {
            System.err.println("--" + key + " is required");
            usage();
        }
        return v;
    }

    private static int num(Map<String, String> opt, String key, int dflt) {
        String v = opt.get(key);
        if (v == null) {
            return dflt;
        }
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            System.err.println("--" + key + " must be a number, not '" + v + "'");
            System.exit(2);
            return dflt;
        }
    }

    private static void usage() {
        System.err.println("usage: GrpcClient produce --endpoints HOST:PORT --topic T [--interval MS]\n"
                + "       GrpcClient consume --endpoints HOST:PORT --topic T --group G\n"
                + "  common: [--request-timeout S] [--start-timeout S]");
        System.exit(2);
    }
}
