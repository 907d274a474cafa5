package io.kvrouter.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.testkit.TestCertificates;
import io.kvrouter.server.RouterNode;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The CLI against a router with mutual TLS and tokens: --ca-file, --cert-file/--key-file and --token. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class CliSecurityTest {
  private static final String OPS = "ops-token-0123456789";
  private static final String CLIENT = "client-token-0123456789";
  private static final TestCertificates certs = TestCertificates.shared();
  private static RouterNode node;

  @BeforeAll
  static void startRouter() {
    node = CliEndToEndTest.startRouter(certs.routerTlsConfig(true) + """
        kvrouter.auth {
          enabled = on
          tokens = [
            { token = "%s", roles = [admin, workers] }
            { token = "%s", roles = [router] }
          ]
        }
        """.formatted(OPS, CLIENT));
  }

  @AfterAll
  static void stopRouter() {
    if (node != null) {
      node.close();
    }
  }

  /** The CLI with the client certificate, trusting the test CA, with {@code token} unless null. */
  private static CliRun cli(String token, String... args) {
    List<String> all = new ArrayList<>(List.of("--target", "127.0.0.1:" + node.grpcPort(), "--timeout", "10s",
        "--ca-file", certs.ca.toString(), "--cert-file", certs.clientChain.toString(),
        "--key-file", certs.clientKey.toString()));
    if (token != null) {
      all.addAll(List.of("--token", token));
    }
    all.addAll(List.of(args));
    return CliRun.run(all.toArray(String[]::new));
  }

  @Test
  void withTheCaTheClientCertificateAndATokenCallsWork() {
    CliRun register = cli(OPS, "register-worker", "--model", "cli-tls", "--worker", "w1", "--max-batched-tokens",
        "8192", "--kv-blocks", "1024", "--block-size", "16", "--endpoint", "http://w1:8000");
    assertThat(register.exitCode()).as(register.toString()).isZero();
    CliRun select = cli(CLIENT, "select", "--model", "cli-tls", "--token-count", "32");
    assertThat(select.exitCode()).as(select.toString()).isZero();
    assertThat(select.out()).contains("\"workerId\": \"w1\"");
    CliRun models = cli(OPS, "models");
    assertThat(models.exitCode()).as(models.toString()).isZero();
    assertThat(models.out()).contains("cli-tls");
  }

  @Test
  void withoutATokenOrWithTheWrongRoleTheCliReportsTheStatusAndReason() {
    CliRun missing = cli(null, "models");
    assertThat(missing.exitCode()).as(missing.toString()).isEqualTo(KvRouterCli.EXIT_GRPC);
    assertThat(missing.err()).startsWith("ERROR UNAUTHENTICATED MISSING_TOKEN");
    CliRun denied = cli(CLIENT, "models");
    assertThat(denied.exitCode()).as(denied.toString()).isEqualTo(KvRouterCli.EXIT_GRPC);
    assertThat(denied.err()).startsWith("ERROR PERMISSION_DENIED MISSING_ROLE");
  }

  @Test
  void withoutTheCaOrTheClientCertificateTheConnectionFails() {
    CliRun plaintext = CliRun.run("--target", "127.0.0.1:" + node.grpcPort(), "--timeout", "10s", "--token", OPS,
        "models");
    assertThat(plaintext.exitCode()).as(plaintext.toString()).isEqualTo(KvRouterCli.EXIT_GRPC);
    CliRun noClientCertificate = CliRun.run("--target", "127.0.0.1:" + node.grpcPort(), "--timeout", "10s",
        "--ca-file", certs.ca.toString(), "--token", OPS, "models");
    assertThat(noClientCertificate.exitCode()).as(noClientCertificate.toString()).isEqualTo(KvRouterCli.EXIT_GRPC);
    assertThat(noClientCertificate.err()).startsWith("ERROR UNAVAILABLE");
  }

  @Test
  void aCertificateWithoutItsKeyIsAUsageError() {
    CliRun run = CliRun.run("--target", "127.0.0.1:" + node.grpcPort(), "--cert-file", certs.clientChain.toString(),
        "models");
    assertThat(run.exitCode()).isEqualTo(KvRouterCli.EXIT_USAGE);
    assertThat(run.err()).contains("--cert-file and --key-file go together");
  }
}
