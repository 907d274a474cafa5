package io.kvrouter.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Metadata;
import io.grpc.Status;
import io.kvrouter.api.ReasonTrailer;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.SetPolicyRequest;
import io.kvrouter.api.v1.WorkerRegistration;
import io.kvrouter.api.v1.WorkerRole;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;
import picocli.CommandLine.ParseResult;

/** Option parsing and validation, without a server: requests are built from parsed commands, never sent. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CommandParsingTest {

  @SuppressWarnings("unchecked")
  private static <T> T parsed(String... args) {
    CommandLine cl = KvRouterCli.commandLine();
    ParseResult pr = cl.parseArgs(args);
    return (T) pr.subcommand().commandSpec().userObject();
  }

  private static KvRouterCli root(String... args) {
    CommandLine cl = KvRouterCli.commandLine();
    cl.parseArgs(args);
    return cl.getCommand();
  }

  @Test
  void selectWithExplicitTokensAndOverrides() {
    RouteCommands.Select select = parsed("select", "--model", "llama", "--tokens", "1,2,3", "--pinned", "w1",
        "--pinned-rank", "2", "--allowed", "w1, w2", "--temperature", "0.5", "--overlap-credit", "2",
        "--prefill-load-scale", "1.5", "--scope", "GLOBAL");
    RouteRequest req = select.request();
    assertThat(req.getModel()).isEqualTo("llama");
    assertThat(req.getTokenIdsList()).containsExactly(1, 2, 3);
    assertThat(req.getBlockHashesList()).isEmpty();
    assertThat(req.getPinnedWorker()).isEqualTo("w1");
    assertThat(req.hasPinnedDpRank()).isTrue();
    assertThat(req.getPinnedDpRank()).isEqualTo(2);
    assertThat(req.getAllowedWorkersList()).containsExactly("w1", "w2");
    assertThat(req.getOverrides().getTemperature()).isEqualTo(0.5);
    assertThat(req.getOverrides().getOverlapCredit()).isEqualTo(2.0);
    assertThat(req.getOverrides().getPrefillLoadScale()).isEqualTo(1.5);
    assertThat(req.getScope()).isEqualTo(io.kvrouter.api.v1.Scope.SCOPE_GLOBAL);
  }

  @Test
  void aDpRankAloneIsAStrictDpRankPick() {
    RouteRequest req = ((RouteCommands.Select) parsed("select", "--model", "llama", "--tokens", "1",
        "--pinned-rank", "3")).request();
    assertThat(req.getPinnedWorker()).isEmpty();
    assertThat(req.hasPinnedDpRank()).isTrue();
    assertThat(req.getPinnedDpRank()).isEqualTo(3);
  }

  @Test
  void bookCarriesTheQueueFieldsExclusionsAndRetry() {
    RouteRequest req = ((RouteCommands.Book) parsed("book", "--model", "m", "--tokens", "5", "--request-id", "r",
        "--excluded", "w3,w4", "--priority", "2", "--strict-priority", "1", "--policy-class", "tenant-a",
        "--retry", "1")).request();
    assertThat(req.getExcludedWorkersList()).containsExactly("w3", "w4");
    assertThat(req.getPriority()).isEqualTo(2);
    assertThat(req.getStrictPriority()).isEqualTo(1);
    assertThat(req.getPolicyClass()).isEqualTo("tenant-a");
    assertThat(req.getRetry()).isEqualTo(1);
  }

  @Test
  void aNegativeRetryIsRefused() {
    RouteCommands.Book book = parsed("book", "--model", "m", "--tokens", "5", "--request-id", "r", "--retry", "-1");
    assertThatThrownBy(book::request).isInstanceOf(picocli.CommandLine.ParameterException.class)
        .hasMessageContaining("--retry");
  }

  @Test
  void bookWithASessionAndItsMode() {
    RouteRequest req = ((RouteCommands.Book) parsed("book", "--model", "m", "--tokens", "5", "--request-id", "r",
        "--session", "conv-1", "--session-mode", "HARD")).request();
    assertThat(req.getSessionId()).isEqualTo("conv-1");
    assertThat(req.getSessionMode()).isEqualTo(io.kvrouter.api.v1.SessionMode.SESSION_MODE_HARD);
    RouteRequest soft = ((RouteCommands.Book) parsed("book", "--model", "m", "--tokens", "5", "--request-id", "r",
        "--session", "conv-1")).request();
    assertThat(soft.getSessionMode()).as("the model's mode").isEqualTo(
        io.kvrouter.api.v1.SessionMode.SESSION_MODE_UNSPECIFIED);
  }

  @Test
  void taintsOnRequestsAndWorkers() {
    RouteRequest req = ((RouteCommands.Select) parsed("select", "--model", "m", "--tokens", "5",
        "--required-taints", "zone=eu-1, gpu=h100", "--preferred-taints", "spot", "--preferred-taint-multiplier",
        "0.25")).request();
    assertThat(req.getRequiredTaintsList()).containsExactly("zone=eu-1", "gpu=h100");
    assertThat(req.getPreferredTaintsList()).containsExactly("spot");
    assertThat(req.getPreferredTaintMultiplier()).isEqualTo(0.25);
  }

  @Test
  void selectLeavesUnsetOptionalsUnset() {
    RouteRequest req = ((RouteCommands.Select) parsed("select", "--model", "m", "--tokens", "5")).request();
    assertThat(req.hasOverrides()).isFalse();
    assertThat(req.hasPinnedDpRank()).isFalse();
    assertThat(req.getRequestId()).isEmpty();
  }

  @Test
  void tokenCountGeneratesTheSeededSequence() {
    RouteRequest a = ((RouteCommands.Select) parsed("select", "--model", "m", "--token-count", "32",
        "--token-seed", "7")).request();
    assertThat(a.getTokenIdsList()).hasSize(32);
    assertThat(a.getTokenIdsList().stream().mapToInt(Integer::intValue).toArray())
        .containsExactly(TokenGenerator.generate(7, 32));
    RouteRequest defaultSeed = ((RouteCommands.Select) parsed("select", "--model", "m", "--token-count", "32"))
        .request();
    assertThat(defaultSeed.getTokenIdsList().stream().mapToInt(Integer::intValue).toArray())
        .containsExactly(TokenGenerator.generate(0, 32));
  }

  @Test
  void blockHashesCarryTheInputLength() {
    RouteRequest req = ((RouteCommands.Select) parsed("select", "--model", "m", "--block-hashes", "0x1,2",
        "--isl", "40")).request();
    assertThat(req.getBlockHashesList()).containsExactly(1L, 2L);
    assertThat(req.getIslTokens()).isEqualTo(40);
    assertThat(req.getTokenIdsList()).isEmpty();
  }

  @Test
  void bookCarriesTheRequestId() {
    RouteRequest req = ((RouteCommands.Book) parsed("book", "--model", "m", "--tokens", "1", "--request-id", "r-1"))
        .request();
    assertThat(req.getRequestId()).isEqualTo("r-1");
  }

  @Test
  void disaggregationAndLoraOptionsReachTheirFields() {
    RouteRequest req = ((RouteCommands.Book) parsed("book", "--model", "m", "--tokens", "1", "--request-id", "r",
        "--disaggregation", "disaggregated", "--lora-name", "sql")).request();
    assertThat(req.getDisaggregation()).isEqualTo(io.kvrouter.api.v1.Disaggregation.DISAGGREGATION_DISAGGREGATED);
    assertThat(req.getLoraName()).isEqualTo("sql");
    RouteRequest plain = ((RouteCommands.Book) parsed("book", "--model", "m", "--tokens", "1", "--request-id", "r"))
        .request();
    assertThat(plain.getDisaggregation()).isEqualTo(io.kvrouter.api.v1.Disaggregation.DISAGGREGATION_AUTO);
    WorkerRegistration reg = ((WorkerCommands.Register) parsed("register-worker", "--model", "m", "--worker", "w1",
        "--max-batched-tokens", "1", "--kv-blocks", "1", "--block-size", "1", "--role", "prefill",
        "--lora-adapters", "sql, chat")).request();
    assertThat(reg.getRole()).isEqualTo(WorkerRole.WORKER_ROLE_PREFILL);
    assertThat(reg.getLoraAdaptersList()).containsExactly("sql", "chat");
  }

  @Test
  void registerWorkerBuildsTheRegistration() {
    WorkerRegistration reg = ((WorkerCommands.Register) parsed("register-worker", "--model", "m", "--worker", "w1",
        "--dp-start", "2", "--dp-size", "4", "--max-batched-tokens", "8192", "--kv-blocks", "4096",
        "--block-size", "16", "--endpoint", "http://w1:8000", "--region", "eu", "--role", "Decode")).request();
    assertThat(reg.getModel()).isEqualTo("m");
    assertThat(reg.getWorkerId()).isEqualTo("w1");
    assertThat(reg.getDpStart()).isEqualTo(2);
    assertThat(reg.getDpSize()).isEqualTo(4);
    assertThat(reg.getMaxNumBatchedTokens()).isEqualTo(8192);
    assertThat(reg.getTotalKvBlocks()).isEqualTo(4096);
    assertThat(reg.getBlockSize()).isEqualTo(16);
    assertThat(reg.getEndpoint()).isEqualTo("http://w1:8000");
    assertThat(reg.getRegion()).isEqualTo("eu");
    assertThat(reg.getRole()).isEqualTo(WorkerRole.WORKER_ROLE_DECODE);

    WorkerRegistration defaults = ((WorkerCommands.Register) parsed("register-worker", "--model", "m", "--worker",
        "w1", "--max-batched-tokens", "1", "--kv-blocks", "1", "--block-size", "1")).request();
    assertThat(defaults.getDpStart()).isZero();
    assertThat(defaults.getDpSize()).isEqualTo(1);
    assertThat(defaults.getRole()).isEqualTo(WorkerRole.WORKER_ROLE_UNSPECIFIED);
  }

  @Test
  void setPolicyCollectsParameters() {
    SetPolicyRequest req = ((AdminCommands.SetPolicy) parsed("set-policy", "--model", "m", "--policy", "kv",
        "--param", "temperature=0.2", "--param", "overlap_credit=1.5")).request();
    assertThat(req.getPolicy()).isEqualTo("kv");
    assertThat(req.getParametersMap()).containsEntry("temperature", "0.2").containsEntry("overlap_credit", "1.5")
        .hasSize(2);
  }

  @Test
  void releaseTakesAnUnsigned64Attempt() {
    BookingRef ref = ((BookingCommands.Release) parsed("release", "--model", "m", "--request-id", "r",
        "--attempt", "18446744073709551615")).ref();
    assertThat(ref.getAttempt()).isEqualTo(-1L);
    assertThat(ref.getRequestId()).isEqualTo("r");
  }

  @Test
  void bookingCallsTakeTheBookingsRegion() {
    BookingRef release = ((BookingCommands.Release) parsed("release", "--model", "m", "--request-id", "r",
        "--attempt", "3", "--region", "us")).ref();
    assertThat(release.getRegion()).isEqualTo("us");
    BookingRef renew = ((BookingCommands.Renew) parsed("renew", "--model", "m", "--request-id", "r",
        "--attempt", "3", "--region", "eu")).ref();
    assertThat(renew.getRegion()).isEqualTo("eu");
    BookingRef prefill = ((BookingCommands.MarkPrefillDone) parsed("mark-prefill-done", "--model", "m",
        "--request-id", "r", "--attempt", "3")).ref();
    assertThat(prefill.getRegion()).as("default: the called router's region").isEmpty();
  }

  @Test
  void globalOptionsWorkBeforeAndAfterTheSubcommand() {
    KvRouterCli before = root("--target", "10.0.0.1:7000", "--timeout", "250ms", "models");
    assertThat(before.target()).isEqualTo(new Args.Target("10.0.0.1", 7000));
    assertThat(before.timeout()).isEqualTo(Duration.ofMillis(250));
    KvRouterCli after = root("models", "--target", "10.0.0.2:7001", "--timeout", "2s");
    assertThat(after.target()).isEqualTo(new Args.Target("10.0.0.2", 7001));
    assertThat(after.timeout()).isEqualTo(Duration.ofSeconds(2));
    KvRouterCli defaults = root("models");
    assertThat(defaults.timeout()).isEqualTo(Duration.ofSeconds(5));
    String env = System.getenv("KVROUTER_TARGET");
    assertThat(defaults.target())
        .isEqualTo(Args.parseTarget(env == null ? KvRouterCli.DEFAULT_TARGET : env));
  }

  @Test
  void usageErrorsExitOneBeforeConnecting() {
    String[][] cases = {
        {},
        {"no-such-command"},
        {"book", "--model", "m", "--tokens", "1"},                                   // no --request-id
        {"select", "--tokens", "1"},                                                 // no --model
        {"select", "--model", "m"},                                                  // no prompt
        {"select", "--model", "m", "--tokens", "1", "--token-count", "3"},           // two prompts
        {"select", "--model", "m", "--block-hashes", "1,2"},                         // no --isl
        {"select", "--model", "m", "--tokens", "1,x"},
        {"select", "--model", "m", "--tokens", "1", "--token-seed", "3"},
        {"select", "--model", "m", "--tokens", "1", "--pinned-rank", "-1"},
        {"select", "--model", "m", "--tokens", "1", "--temperature", "-1"},
        {"book", "--model", "m", "--tokens", "1", "--request-id", "r", "--session-mode", "hard"}, // no --session
        {"book", "--model", "m", "--tokens", "1", "--request-id", "r", "--session", "s", "--session-mode", "sticky"},
        {"book", "--model", "m", "--tokens", "1", "--request-id", "r", "--session", " "},
        {"select", "--model", "m", "--tokens", "1", "--preferred-taint-multiplier", "0.5"},  // no --preferred-taints
        {"select", "--model", " ", "--tokens", "1"},
        {"register-worker", "--model", "m", "--worker", "w", "--max-batched-tokens", "1", "--kv-blocks", "1"},
        {"register-worker", "--model", "m", "--worker", "w", "--max-batched-tokens", "1", "--kv-blocks", "1",
            "--block-size", "0"},
        {"register-worker", "--model", "m", "--worker", "w", "--max-batched-tokens", "1", "--kv-blocks", "1",
            "--block-size", "16", "--role", "leader"},
        {"book", "--model", "m", "--tokens", "1", "--request-id", "r", "--disaggregation", "halfway"},
        {"release", "--model", "m", "--request-id", "r"},                            // no --attempt
        {"release", "--model", "m", "--request-id", "r", "--attempt", "-3"},
        {"set-policy", "--model", "m"},                                              // nothing to set
        {"set-policy", "--model", "m", "--param", "novalue"},
        {"--target", "nonsense", "models"},
        {"--timeout", "0s", "models"},
    };
    for (String[] args : cases) {
      CliRun run = CliRun.run(args);
      assertThat(run.exitCode()).as(String.join(" ", args) + "\n" + run).isEqualTo(KvRouterCli.EXIT_USAGE);
      assertThat(run.out()).as(String.join(" ", args)).isEmpty();
      assertThat(run.err()).as(String.join(" ", args)).isNotBlank();
    }
  }

  @Test
  void usageErrorNamesTheMissingOption() {
    CliRun run = CliRun.run("book", "--model", "m", "--tokens", "1");
    assertThat(run.err()).contains("--request-id").contains("Usage:");
    CliRun twoPrompts = CliRun.run("select", "--model", "m", "--tokens", "1", "--token-count", "3");
    assertThat(twoPrompts.err()).contains("exactly one way");
  }

  @Test
  void helpExitsZero() {
    CliRun run = CliRun.run("--help");
    assertThat(run.exitCode()).isZero();
    assertThat(run.out()).contains("register-worker", "select", "book", "release", "set-policy", "Exit codes");
  }

  @Test
  void anUnreachableRouterIsAGrpcErrorWithExitTwo() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    CliRun run = CliRun.run("--target", "127.0.0.1:" + port, "--timeout", "1s", "models");
    assertThat(run.exitCode()).as(run.toString()).isEqualTo(KvRouterCli.EXIT_GRPC);
    assertThat(run.out()).isEmpty();
    assertThat(run.err()).matches("(?s)ERROR (UNAVAILABLE|DEADLINE_EXCEEDED)[ :].*");
  }

  @Test
  void errorLineCarriesStatusReasonAndDescription() {
    Metadata trailers = new Metadata();
    trailers.put(ReasonTrailer.KEY, "UNKNOWN_MODEL");
    var sre = Status.NOT_FOUND.withDescription("model 'x' has no registered worker").asRuntimeException(trailers);
    var failure = ErrorReport.find(new CompletionException(new RuntimeException(sre))).orElseThrow();
    assertThat(failure.line()).isEqualTo("ERROR NOT_FOUND UNKNOWN_MODEL: model 'x' has no registered worker");
    assertThat(ErrorReport.find(Status.UNAVAILABLE.withDescription("io").asRuntimeException()).orElseThrow().line())
        .isEqualTo("ERROR UNAVAILABLE: io");
    assertThat(ErrorReport.find(new IllegalStateException("x"))).isEmpty();
  }
}
