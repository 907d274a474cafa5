package io.kvrouter.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.typesafe.config.ConfigFactory;
import io.kvrouter.core.testkit.TestCertificates;
import java.time.Duration;
import java.util.stream.StreamSupport;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.Test;

/**
 * Two router nodes on loopback joined over Artery's tls-tcp, configured as README.md, Security, says (the
 * variables' config keys): each presents its key store's certificate and trusts the test CA.
 */
class RemotingTlsTest {
  private static final TestCertificates certs = TestCertificates.shared();

  private static RouterNode node(String seedNodes) {
    return Main.init(ConfigFactory.parseString("""
        kvrouter.grpc.port = 0
        kvrouter.management.port = 0
        kvrouter.front.port = 0
        kvrouter.epp.port = 0
        kvrouter.epp.health-port = 0
        kvrouter.cluster.seed-nodes = "%s"
        kvrouter.cluster.failure-detection.profile = loopback
        pekko.remote.artery.canonical.port = 0
        pekko.remote.artery.transport = tls-tcp
        pekko.remote.artery.ssl.config-ssl-engine {
          key-store = "%s"
          key-store-password = "%s"
          key-password = "%s"
          trust-store = "%s"
          trust-store-password = "%s"
        }
        pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
        pekko.loglevel = WARNING
        """.formatted(seedNodes, certs.serverKeyStore, TestCertificates.STORE_PASSWORD,
        TestCertificates.STORE_PASSWORD, certs.trustStore, TestCertificates.STORE_PASSWORD)));
  }

  private static long up(RouterNode node) {
    Iterable<Member> members = Cluster.get(node.system()).state().getMembers();
    return StreamSupport.stream(members.spliterator(), false).filter(m -> m.status() == MemberStatus.up()).count();
  }

  @Test
  void twoNodesJoinOverTlsTcp() {
    try (RouterNode first = node("")) {
      assertThat(first.system().settings().config().getString("pekko.remote.artery.transport")).isEqualTo("tls-tcp");
      int port = (Integer) Cluster.get(first.system()).selfMember().address().port().get();
      try (RouterNode second = node("127.0.0.1:" + port)) {
        await().atMost(Duration.ofSeconds(30)).until(() -> up(first) == 2 && up(second) == 2);
      }
    }
  }
}
