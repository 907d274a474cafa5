package io.kvrouter.interop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Message;
import com.typesafe.config.ConfigFactory;
import io.grpc.Status;
import io.kvrouter.api.ReasonTrailer;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.LoadAck;
import io.kvrouter.api.v1.ListModelsRequest;
import io.kvrouter.api.v1.LoadReport;
import io.kvrouter.api.v1.ModelList;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.api.v1.ModelStateRequest;
import io.kvrouter.api.v1.PolicySet;
import io.kvrouter.api.v1.RankLoadReport;
import io.kvrouter.api.v1.Registered;
import io.kvrouter.api.v1.Released;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.api.v1.SetPolicyRequest;
import io.kvrouter.api.v1.WorkerRegistration;
import io.kvrouter.interop.InteropClient.Call;
import io.kvrouter.interop.InteropClient.Reply;
import io.kvrouter.server.Main;
import io.kvrouter.server.RouterNode;
import io.kvrouter.server.transport.Binding;
import io.kvrouter.cluster.testkit.AdmissionProbes;
import io.kvrouter.core.admission.Clock;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.AfterParameterizedClassInvocation;
import org.junit.jupiter.params.BeforeParameterizedClassInvocation;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Two clients that are not ours, plain grpc-java and {@code @grpc/grpc-js}, against every gRPC binding of the
 * server: one node per binding (Books held {@value #BOOK_DELAY_MS} ms before admission by a probe around the actor),
 * every scenario from each client, each client on models of its own. Every call carries custom request metadata
 * (text and binary), which the server must accept.
 */
@ParameterizedClass(name = "binding {0}")
@EnumSource(Binding.class)
class InteropTest {
  static final long BOOK_DELAY_MS = 500;
  private static final Duration CALL_TIMEOUT = Duration.ofSeconds(10);

  private static RouterNode node;
  private static Map<String, InteropClient> clients;

  @Parameter
  Binding binding;

  @BeforeParameterizedClassInvocation
  static void startNode(Binding binding) {
    try {
      node = Main.init(ConfigFactory.parseString("""
          kvrouter.grpc.binding = "%s"
          kvrouter.grpc.port = 0
          kvrouter.management.port = 0
          kvrouter.front.port = 0
          kvrouter.epp.port = 0
          kvrouter.epp.health-port = 0
          pekko.remote.artery.canonical.port = 0
          pekko.actor.serialize-messages = on
          pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
          pekko.loglevel = WARNING
          """.formatted(binding.configName())), Clock.SYSTEM,
          AdmissionProbes.holdingBooks(Clock.SYSTEM, Duration.ofMillis(BOOK_DELAY_MS)));
    } catch (RuntimeException e) {
      node = null;
      Assumptions.abort("binding " + binding.configName() + " does not start: " + e);
    }
    Cluster cluster = Cluster.get(node.system());
    await().atMost(Duration.ofSeconds(20)).until(() -> cluster.selfMember().status() == MemberStatus.up());
    clients = new LinkedHashMap<>();
    clients.put("grpc-java", new GrpcJavaClient(node.grpcHost(), node.grpcPort()));
    clients.put("grpc-js", new GrpcJsClient(node.grpcHost(), node.grpcPort(), "grpc-js-" + binding.configName()));
    // Until every binding is wired, Main may fall back to the stock one: a grpc-java server sends no `server`
    // header, pekko-http sends its own. Skip (not pass) a netty binding that is not in effect.
    for (InteropClient client : clients.values()) {
      Reply probe = call(client, "Admin", "ListModels", ListModelsRequest.getDefaultInstance(),
          ModelList.getDefaultInstance());
      assertThat(probe.code()).as("%s", probe).isEqualTo(Status.Code.OK);
      assertThat(probe.headers().get("content-type")).as("response headers").startsWith("application/grpc");
      String server = probe.headers().get("server");
      System.out.printf("binding %s, %s: response headers %s%n", binding.configName(), client.name(),
          probe.headers());
      if (binding == Binding.NETTY && server != null && server.startsWith("pekko-http")) {
        stopNode();
        Assumptions.abort("binding netty is not in effect: the server answering is " + server);
      }
    }
  }

  @AfterParameterizedClassInvocation
  static void stopNode() {
    if (clients != null) {
      clients.values().forEach(InteropClient::close);
      clients = null;
    }
    if (node != null) {
      node.close();
      node = null;
    }
  }

  static Stream<String> clients() {
    return Stream.of("grpc-java", "grpc-js");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("clients")
  void registerSelectBookRelease(String clientName) {
    InteropClient client = clients.get(clientName);
    String model = model(client, "basic");
    Registered first = registerTwo(client, model);
    assertThat(first.getViewVersion()).isPositive();
    // registration is idempotent
    assertThat(call(client, "Workers", "Register", worker(model, "w1").build(), Registered.getDefaultInstance())
        .response(Registered.class).getCreated()).isFalse();

    Selection selection = call(client, "Router", "Select", prompt(model).build(), Selection.getDefaultInstance())
        .response(Selection.class);
    assertThat(selection.getWorker().getWorkerId()).isIn("w1", "w2");
    assertThat(selection.getWorker().getEndpoint()).isEqualTo("http://" + selection.getWorker().getWorkerId() + ":8000");
    assertThat(selection.getPolicy()).isEqualTo("kv");
    assertThat(selection.getViewVersion()).isPositive();
    assertThat(state(client, model).getBookingsList()).isEmpty();

    Booking booking = call(client, "Router", "Book", prompt(model).setRequestId("req-1").build(),
        Booking.getDefaultInstance()).response(Booking.class);
    assertThat(booking.getRequestId()).isEqualTo("req-1");
    assertThat(booking.getReplay()).isFalse();
    assertThat(booking.getAttempt()).isPositive();
    assertThat(booking.getSelection().getWorker().getWorkerId()).isIn("w1", "w2");
    assertThat(booking.getSelection().getViewVersion()).isPositive();
    ModelState booked = state(client, model);
    assertThat(booked.getModel()).isEqualTo(model);
    assertThat(booked.getWorkersCount()).isEqualTo(2);
    assertThat(booked.getBookingsList()).singleElement().satisfies(b -> {
      assertThat(b.getRequestId()).isEqualTo("req-1");
      assertThat(b.getAttempt()).isEqualTo(booking.getAttempt());
      assertThat(b.getWorkerId()).isEqualTo(booking.getSelection().getWorker().getWorkerId());
    });

    BookingRef ref = BookingRef.newBuilder().setModel(model).setRequestId("req-1").setAttempt(booking.getAttempt())
        .build();
    assertThat(call(client, "Router", "Release", ref, Released.getDefaultInstance()).response(Released.class)
        .getApplied()).isTrue();
    assertThat(call(client, "Router", "Release", ref, Released.getDefaultInstance()).response(Released.class)
        .getApplied()).isFalse();
    assertThat(state(client, model).getBookingsList()).isEmpty();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("clients")
  void invalidArgument(String clientName) {
    InteropClient client = clients.get(clientName);
    String model = model(client, "invalid");
    registerTwo(client, model);
    assertRejected(call(client, "Router", "Select", prompt("").build(), Selection.getDefaultInstance()),
        Status.Code.INVALID_ARGUMENT, "EMPTY_MODEL");
    RouteRequest tooLong = RouteRequest.newBuilder().setModel(model).setIslTokens(131_073).build();
    assertRejected(call(client, "Router", "Select", tooLong, Selection.getDefaultInstance()),
        Status.Code.INVALID_ARGUMENT, "TOO_MANY_TOKENS");
    assertRejected(call(client, "Router", "Book", tooLong.toBuilder().setRequestId("too-long").build(),
        Booking.getDefaultInstance()), Status.Code.INVALID_ARGUMENT, "TOO_MANY_TOKENS");
    assertThat(state(client, model).getBookingsList()).isEmpty();
  }

  /**
   * A rejected call must not hurt its neighbours on the connection: once, a status message echoing a 75 KB model
   * name made grpc-js tear the connection down, failing every call in flight on it with UNAVAILABLE.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("clients")
  void aHugeModelNameDoesNotHurtTheCallsBesideIt(String clientName) {
    InteropClient client = clients.get(clientName);
    String model = model(client, "neighbours");
    registerTwo(client, model);
    List<InteropClient.Call> calls = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      calls.add(new InteropClient.Call("Router", "Select", prompt("x".repeat(100_000)).build(),
          Selection.getDefaultInstance(), Map.of(), CALL_TIMEOUT));
      calls.add(new InteropClient.Call("Router", "Select", prompt(model).build(), Selection.getDefaultInstance(),
          Map.of(), CALL_TIMEOUT));
    }
    List<Reply> replies = client.callTogether(calls);
    for (int i = 0; i < replies.size(); i += 2) {
      assertRejected(replies.get(i), Status.Code.INVALID_ARGUMENT, "FIELD_TOO_LONG");
      assertThat(replies.get(i).details()).hasSizeLessThan(1_024);
      assertThat(replies.get(i + 1).code()).as("%s", replies.get(i + 1)).isEqualTo(Status.Code.OK);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("clients")
  void nonAsciiModelNamesArriveIntact(String clientName) {
    InteropClient client = clients.get(clientName);
    String model = model(client, "modèle-漢字");
    registerTwo(client, model);
    assertThat(state(client, model).getModel()).isEqualTo(model);
    assertThat(call(client, "Router", "Select", prompt(model).build(), Selection.getDefaultInstance())
        .response(Selection.class).getWorker().getWorkerId()).isIn("w1", "w2");

    String unknown = model(client, "inconnu-modèle-漢字-🚀");
    Reply select = call(client, "Router", "Select", prompt(unknown).build(), Selection.getDefaultInstance());
    assertRejected(select, Status.Code.NOT_FOUND, "UNKNOWN_MODEL");
    assertThat(select.details()).contains("'" + unknown + "'");
    Reply book = call(client, "Router", "Book", prompt(unknown).setRequestId("r").build(),
        Booking.getDefaultInstance());
    assertRejected(book, Status.Code.NOT_FOUND, "UNKNOWN_MODEL");
    assertThat(book.details()).contains("'" + unknown + "'");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("clients")
  void alreadyExists(String clientName) {
    InteropClient client = clients.get(clientName);
    String model = model(client, "conflict");
    registerTwo(client, model);
    assertRejected(call(client, "Workers", "Register", worker(model, "w1").setTotalKvBlocks(2000).build(),
        Registered.getDefaultInstance()), Status.Code.ALREADY_EXISTS, "WORKER_CONFIG_CONFLICT");
    assertThat(state(client, model).getWorkersList())
        .filteredOn(w -> w.getConfig().getWorkerId().equals("w1"))
        .singleElement().satisfies(w -> assertThat(w.getConfig().getTotalKvBlocks()).isEqualTo(1000));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("clients")
  void failedPrecondition(String clientName) {
    InteropClient client = clients.get(clientName);
    String model = model(client, "pinned");
    registerTwo(client, model);
    RouteRequest pinned = prompt(model).setPinnedWorker("w1").addAllowedWorkers("w2").build();
    assertRejected(call(client, "Router", "Select", pinned, Selection.getDefaultInstance()),
        Status.Code.FAILED_PRECONDITION, "PINNED_WORKER_NOT_ALLOWED");
    assertRejected(call(client, "Router", "Book", pinned.toBuilder().setRequestId("p").build(),
        Booking.getDefaultInstance()), Status.Code.FAILED_PRECONDITION, "PINNED_WORKER_NOT_ALLOWED");
    assertThat(state(client, model).getBookingsList()).isEmpty();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("clients")
  void unavailableWhenAllWorkersAreOverloaded(String clientName) {
    InteropClient client = clients.get(clientName);
    String model = model(client, "overloaded");
    registerTwo(client, model);
    PolicySet set = call(client, "Admin", "SetPolicy", SetPolicyRequest.newBuilder().setModel(model)
        .putParameters("active_decode_blocks_threshold", "0.1").build(), PolicySet.getDefaultInstance())
        .response(PolicySet.class);
    assertThat(set.getPolicy()).isEqualTo("kv");
    for (String worker : new String[] {"w1", "w2"}) {
      // 200 of 1000 KV blocks in use: above 10 %
      call(client, "Workers", "ReportLoad", LoadReport.newBuilder().setModel(model).setWorkerId(worker)
          .addRanks(RankLoadReport.newBuilder().setDpRank(0).setActiveDecodeBlocks(200)).build(),
          LoadAck.getDefaultInstance()).response(LoadAck.class);
    }
    assertThat(state(client, model).getPolicyParametersMap())
        .containsEntry("active_decode_blocks_threshold", "0.1");
    assertRejected(call(client, "Router", "Select", prompt(model).build(), Selection.getDefaultInstance()),
        Status.Code.UNAVAILABLE, "ALL_WORKERS_OVERLOADED");
    assertRejected(call(client, "Router", "Book", prompt(model).setRequestId("o").build(),
        Booking.getDefaultInstance()), Status.Code.UNAVAILABLE, "ALL_WORKERS_OVERLOADED");
    assertThat(state(client, model).getBookingsList()).isEmpty();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("clients")
  void bookDeadlines(String clientName) {
    InteropClient client = clients.get(clientName);
    String model = model(client, "deadline");
    registerTwo(client, model);

    // the admission path holds every Book 500 ms: a 200 ms deadline passes first
    Reply late = call(client, "Router", "Book", prompt(model).setRequestId("late").build(),
        Booking.getDefaultInstance(), Duration.ofMillis(200));
    System.out.printf("binding %s, %s: Book past its deadline answered %s%n", binding.configName(), client.name(),
        late);
    assertThat(late.code()).as("%s", late).isEqualTo(Status.Code.DEADLINE_EXCEEDED);
    // the server may answer first (with its reason) or the client's own deadline may fire first (no trailers)
    assertThat(late.reason()).isIn(null, "ADMISSION_TIMEOUT", "QUEUE_DEADLINE_EXCEEDED");
    // ... and it leaves no booking, also once the held Book has been processed
    await().pollInterval(Duration.ofMillis(100)).during(Duration.ofMillis(3 * BOOK_DELAY_MS))
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(() -> {
          ModelState state = state(client, model);
          assertThat(state.getBookingsList()).as("bookings after a Book past its deadline").isEmpty();
          assertThat(state.getPending()).isZero();
        });

    Reply onTime = call(client, "Router", "Book", prompt(model).setRequestId("on-time").build(),
        Booking.getDefaultInstance(), Duration.ofSeconds(5));
    Booking booking = onTime.response(Booking.class);
    assertThat(booking.getRequestId()).isEqualTo("on-time");
    assertThat(state(client, model).getBookingsList()).singleElement()
        .satisfies(b -> assertThat(b.getRequestId()).isEqualTo("on-time"));
    assertThat(call(client, "Router", "Release", BookingRef.newBuilder().setModel(model).setRequestId("on-time")
        .setAttempt(booking.getAttempt()).build(), Released.getDefaultInstance()).response(Released.class)
        .getApplied()).isTrue();
  }

  // --- helpers

  private String model(InteropClient client, String scenario) {
    return "interop/" + client.name() + "/" + scenario;
  }

  private static Map<String, String> metadata(InteropClient client) {
    return Map.of(
        "x-interop-client", client.name(),
        "x-interop-trace-bin", Base64.getEncoder().encodeToString(
            ("trace\u0000\u00ff" + client.name()).getBytes(StandardCharsets.ISO_8859_1)));
  }

  private static Reply call(InteropClient client, String service, String method, Message request,
      Message responsePrototype) {
    return call(client, service, method, request, responsePrototype, CALL_TIMEOUT);
  }

  private static Reply call(InteropClient client, String service, String method, Message request,
      Message responsePrototype, Duration timeout) {
    return client.call(new Call(service, method, request, responsePrototype, metadata(client), timeout));
  }

  private static WorkerRegistration.Builder worker(String model, String id) {
    return WorkerRegistration.newBuilder()
        .setModel(model)
        .setWorkerId(id)
        .setDpSize(1)
        .setMaxNumBatchedTokens(8192)
        .setTotalKvBlocks(1000)
        .setBlockSize(16)
        .setEndpoint("http://" + id + ":8000");
  }

  private static Registered registerTwo(InteropClient client, String model) {
    Registered first = call(client, "Workers", "Register", worker(model, "w1").build(),
        Registered.getDefaultInstance()).response(Registered.class);
    assertThat(first.getCreated()).isTrue();
    Registered second = call(client, "Workers", "Register", worker(model, "w2").build(),
        Registered.getDefaultInstance()).response(Registered.class);
    assertThat(second.getCreated()).isTrue();
    return second;
  }

  /** A 64-token prompt (four full blocks of 16). */
  private static RouteRequest.Builder prompt(String model) {
    RouteRequest.Builder request = RouteRequest.newBuilder().setModel(model);
    IntStream.range(0, 64).forEach(i -> request.addTokenIds(1000 + i));
    return request;
  }

  private static ModelState state(InteropClient client, String model) {
    return call(client, "Admin", "GetModelState", ModelStateRequest.newBuilder().setModel(model).build(),
        ModelState.getDefaultInstance()).response(ModelState.class);
  }

  private static void assertRejected(Reply reply, Status.Code code, String reason) {
    assertThat(reply.code()).as("status of %s", reply).isEqualTo(code);
    assertThat(reply.reason()).as("kvrouter-reason of %s", reply).isEqualTo(reason);
    assertThat(reply.trailers()).as("trailers of %s", reply).containsEntry(ReasonTrailer.NAME, reason);
    assertThat(reply.details()).as("description of %s", reply).isNotBlank();
  }
}
