package io.kvrouter.bench;

import com.typesafe.config.Config;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.dispatch.Envelope;
import org.apache.pekko.dispatch.MailboxType;
import org.apache.pekko.dispatch.MessageQueue;
import org.apache.pekko.dispatch.UnboundedMessageQueueSemantics;
import scala.Option;

/**
 * An unbounded mailbox that counts enqueued minus dequeued messages and remembers the maximum. The bench sets it as
 * {@code mailbox-type} of the admission dispatcher; every queue registers under its owner's path so the benchmark
 * can check the admission actor really got one and read its depth.
 */
public final class CountingMailbox implements MailboxType {
  private static final Map<String, Counting> QUEUES = new ConcurrentHashMap<>();

  public CountingMailbox(ActorSystem.Settings settings, Config config) {}

  @Override
  public MessageQueue create(Option<ActorRef> owner, Option<ActorSystem> system) {
    Counting queue = new Counting();
    if (owner.isDefined()) {
      QUEUES.put(owner.get().path().toStringWithoutAddress(), queue);
    }
    return queue;
  }

  /** The queue of the first actor whose path matches, or null if no such actor uses this mailbox. */
  static Counting find(Predicate<String> path) {
    for (Map.Entry<String, Counting> e : QUEUES.entrySet()) {
      if (path.test(e.getKey())) {
        return e.getValue();
      }
    }
    return null;
  }

  /** Paths of every actor that got this mailbox. */
  static java.util.Set<String> owners() {
    return new java.util.TreeSet<>(QUEUES.keySet());
  }

  static void forgetAll() {
    QUEUES.clear();
  }

  /** A ConcurrentLinkedQueue of envelopes with a depth counter. */
  static final class Counting implements MessageQueue, UnboundedMessageQueueSemantics {
    private final ConcurrentLinkedQueue<Envelope> queue = new ConcurrentLinkedQueue<>();
    private final AtomicLong depth = new AtomicLong();
    private final AtomicLong maxDepth = new AtomicLong();
    private final AtomicLong enqueued = new AtomicLong();

    @Override
    public void enqueue(ActorRef receiver, Envelope handle) {
      long d = depth.incrementAndGet();
      enqueued.incrementAndGet();
      long max;
      while (d > (max = maxDepth.get()) && !maxDepth.compareAndSet(max, d)) {
        // retry
      }
      queue.add(handle);
    }

    @Override
    public Envelope dequeue() {
      Envelope e = queue.poll();
      if (e != null) {
        depth.decrementAndGet();
      }
      return e;
    }

    @Override
    public int numberOfMessages() {
      return queue.size();
    }

    @Override
    public boolean hasMessages() {
      return !queue.isEmpty();
    }

    @Override
    public void cleanUp(ActorRef owner, MessageQueue deadLetters) {
      Envelope e;
      while ((e = queue.poll()) != null) {
        deadLetters.enqueue(owner, e);
      }
    }

    long maxDepth() {
      return maxDepth.get();
    }

    long enqueued() {
      return enqueued.get();
    }

    /** Starts a new measurement: the maximum restarts from the current depth. */
    void resetMax() {
      maxDepth.set(depth.get());
    }
  }
}
