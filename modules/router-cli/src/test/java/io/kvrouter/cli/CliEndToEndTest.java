package io.kvrouter.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import com.typesafe.config.ConfigFactory;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.ExplainReply;
import io.kvrouter.api.v1.Explanation;
import io.kvrouter.api.v1.ModelList;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.api.v1.PolicySet;
import io.kvrouter.api.v1.Registered;
import io.kvrouter.api.v1.Released;
import io.kvrouter.api.v1.Renewed;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.server.Main;
import io.kvrouter.server.RouterNode;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The CLI against a real one-node router started in this JVM with ephemeral ports. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class CliEndToEndTest {

  private static RouterNode node;
  private static String target;

  @BeforeAll
  static void startRouter() {
    node = startRouter("");
    target = "127.0.0.1:" + node.grpcPort();
  }

  /** A one-node router on ephemeral ports with {@code config} on top. */
  static RouterNode startRouter(String config) {
    return Main.init(ConfigFactory.parseString(config + """

        kvrouter.grpc.port = 0
        kvrouter.management.port = 0
        kvrouter.front.port = 0
        kvrouter.epp.port = 0
        kvrouter.epp.health-port = 0
        pekko.remote.artery.canonical.port = 0
        pekko.loglevel = WARNING
        """));
  }

  @AfterAll
  static void stopRouter() {
    if (node != null) {
      node.close();
    }
  }

  private static CliRun cli(String... args) {
    String[] all = new String[args.length + 4];
    all[0] = "--target";
    all[1] = target;
    all[2] = "--timeout";
    all[3] = "10s";
    System.arraycopy(args, 0, all, 4, args.length);
    return CliRun.run(all);
  }

  private static CliRun ok(String... args) {
    CliRun run = cli(args);
    assertThat(run.exitCode()).as(String.join(" ", args) + "\n" + run).isZero();
    assertThat(run.err()).as(String.join(" ", args)).isEmpty();
    return run;
  }

  @SuppressWarnings("unchecked")
  private static <T extends Message> T json(CliRun run, Message.Builder builder) throws InvalidProtocolBufferException {
    JsonFormat.parser().merge(run.out(), builder);
    return (T) builder.build();
  }

  private static void register(String model, String worker) {
    CliRun run = ok("register-worker", "--model", model, "--worker", worker, "--max-batched-tokens", "8192",
        "--kv-blocks", "1024", "--block-size", "16", "--endpoint", "http://" + worker + ":8000");
    assertThat(run.out()).contains("\"created\": true");
  }

  @Test
  void registerSelectBookStateReleaseAgainstARealRouter() throws Exception {
    String model = "cli-e2e";
    register(model, "w1");
    register(model, "w2");

    ModelList models = json(ok("models"), ModelList.newBuilder());
    assertThat(models.getModelsList()).contains(model);

    Selection selection = json(ok("select", "--model", model, "--token-count", "64", "--token-seed", "3"),
        Selection.newBuilder());
    assertThat(selection.getWorker().getWorkerId()).isIn("w1", "w2");
    assertThat(selection.getWorker().getEndpoint()).isEqualTo("http://" + selection.getWorker().getWorkerId() + ":8000");

    CliRun bookRun = ok("book", "--model", model, "--tokens", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17",
        "--request-id", "req-1");
    Booking booking = json(bookRun, Booking.newBuilder());
    String bookedWorker = booking.getSelection().getWorker().getWorkerId();
    assertThat(bookedWorker).isIn("w1", "w2");
    assertThat(booking.getRequestId()).isEqualTo("req-1");
    assertThat(booking.getReplay()).isFalse();
    assertThat(bookRun.out()).as("default-valued fields are printed").contains("\"replay\": false");
    String attempt = Long.toUnsignedString(booking.getAttempt());

    ModelState state = json(ok("state", "--model", model), ModelState.newBuilder());
    assertThat(state.getModel()).isEqualTo(model);
    assertThat(state.getWorkersList()).extracting(w -> w.getConfig().getWorkerId())
        .containsExactlyInAnyOrder("w1", "w2");
    assertThat(state.getBookingsList()).hasSize(1);
    assertThat(state.getBookings(0).getRequestId()).isEqualTo("req-1");
    assertThat(state.getBookings(0).getAttempt()).isEqualTo(booking.getAttempt());
    assertThat(state.getBookings(0).getWorkerId()).isEqualTo(bookedWorker);

    Renewed renewed = json(ok("renew", "--model", model, "--request-id", "req-1", "--attempt", attempt),
        Renewed.newBuilder());
    assertThat(renewed.getApplied()).isTrue();

    CliRun release = ok("release", "--model", model, "--request-id", "req-1", "--attempt", attempt);
    assertThat(((Released) json(release, Released.newBuilder())).getApplied()).isTrue();

    CliRun again = ok("release", "--model", model, "--request-id", "req-1", "--attempt", attempt);
    assertThat(((Released) json(again, Released.newBuilder())).getApplied()).isFalse();
    assertThat(again.out()).contains("\"applied\": false");

    ModelState after = json(ok("state", "--model", model), ModelState.newBuilder());
    assertThat(after.getBookingsList()).isEmpty();
  }

  @Test
  void explainPrintsTheLastDecisionsReadablyAndAsJson() throws Exception {
    String model = "cli-e2e-explain";
    register(model, "e1");
    register(model, "e2");
    Selection selection = json(ok("select", "--model", model, "--token-count", "40", "--explain", "--pinned", "e2"),
        Selection.newBuilder());
    assertThat(selection.getExplanation().getFilteredList()).extracting(f -> f.getWorkerId() + " " + f.getReason())
        .containsExactly("e1 PINNED");
    Selection plain = json(ok("select", "--model", model, "--token-count", "40"), Selection.newBuilder());
    assertThat(plain.hasExplanation()).isFalse();
    ok("book", "--model", model, "--token-count", "40", "--request-id", "explained-book");

    String text = ok("explain", "--model", model).out();
    assertThat(text).contains("3 decision(s)", "book request explained-book", "select (no request id)",
        "picked e2/0 (http://e2:8000)", "candidates (2 of 2):", "prefill=", "decode=", "active=", "margin ",
        "filtered (1 of 1):", "e1/0", "PINNED");
    assertThat(text.indexOf("book request explained-book")).as("newest first")
        .isLessThan(text.indexOf("select (no request id)"));

    ExplainReply reply = json(ok("explain", "--model", model, "--limit", "2", "--json"), ExplainReply.newBuilder());
    assertThat(reply.getDecisionsList()).extracting(Explanation::getKind).containsExactly("book", "select");
    assertThat(cli("explain", "--model", model, "--limit", "-1").exitCode()).isEqualTo(KvRouterCli.EXIT_USAGE);
    CliRun unknown = cli("explain", "--model", "nobody-explained");
    assertThat(unknown.exitCode()).isEqualTo(KvRouterCli.EXIT_GRPC);
    assertThat(unknown.err()).contains("UNKNOWN_MODEL");
  }

  /** {@code book --owner-direct}: the Select names the owner (here the one node), the Book goes there. */
  @Test
  void bookOwnerDirectBooksAtTheNodeTheSelectNamesAndReleasesThere() throws Exception {
    String model = "cli-e2e-owner";
    register(model, "o1");
    Booking booking = json(ok("book", "--model", model, "--tokens", "1,2,3", "--request-id", "direct",
        "--owner-direct", "--release-after"), Booking.newBuilder());
    assertThat(booking.getSelection().getOwnerEndpoint()).isEqualTo(target);
    assertThat(booking.getReplay()).isFalse();
    assertThat(((ModelState) json(ok("state", "--model", model), ModelState.newBuilder())).getBookingsList())
        .isEmpty();
  }

  /**
   * A Book whose answer the client never saw (here: booked, then forgotten) is reclaimed by replaying it with the
   * same request id and releasing what comes back; a request id with no live booking is booked and freed at once.
   */
  @Test
  void bookWithReleaseAfterReclaimsABookingWhoseAnswerWasLost() throws Exception {
    String model = "cli-e2e-reclaim";
    register(model, "r1");
    Booking lost = json(ok("book", "--model", model, "--tokens", "1,2,3", "--request-id", "lost"),
        Booking.newBuilder());

    Booking reclaimed = json(ok("book", "--model", model, "--tokens", "1,2,3", "--request-id", "lost",
        "--release-after"), Booking.newBuilder());
    assertThat(reclaimed.getReplay()).isTrue();
    assertThat(reclaimed.getAttempt()).isEqualTo(lost.getAttempt());
    assertThat(((ModelState) json(ok("state", "--model", model), ModelState.newBuilder())).getBookingsList())
        .isEmpty();

    Booking fresh = json(ok("book", "--model", model, "--tokens", "1,2,3", "--request-id", "never-booked",
        "--release-after"), Booking.newBuilder());
    assertThat(fresh.getReplay()).isFalse();
    assertThat(((ModelState) json(ok("state", "--model", model), ModelState.newBuilder())).getBookingsList())
        .isEmpty();
  }

  @Test
  void setPolicyIsReflectedInState() throws Exception {
    String model = "cli-e2e-policy";
    register(model, "p1");
    PolicySet set = json(ok("set-policy", "--model", model, "--policy", "round_robin"), PolicySet.newBuilder());
    assertThat(set.getPolicy()).isEqualTo("round_robin");
    ModelState state = json(ok("state", "--model", model), ModelState.newBuilder());
    assertThat(state.getPolicy()).isEqualTo("round_robin");
  }

  @Test
  void selectOnAnUnknownModelIsNotFoundWithExitTwo() {
    CliRun run = cli("select", "--model", "no-such-model", "--tokens", "1,2,3");
    assertThat(run.exitCode()).as(run.toString()).isEqualTo(KvRouterCli.EXIT_GRPC);
    assertThat(run.out()).isEmpty();
    assertThat(run.err()).startsWith("ERROR NOT_FOUND UNKNOWN_MODEL: ");
  }

  @Test
  void releaseOfAnUnknownBookingIsNotApplied() throws Exception {
    CliRun run = ok("release", "--model", "never-registered", "--request-id", "nope", "--attempt", "1");
    assertThat(((Released) json(run, Released.newBuilder())).getApplied()).isFalse();
  }
}
