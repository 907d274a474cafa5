package io.kvrouter.server.management;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.server.TestRouter;
import java.io.IOException;
import java.io.InputStream;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * {@code GET /dashboard} on a running node's management server: the page and its assets with their content types,
 * and nothing else from the classpath. What the page shows is tested in a browser (router-interop's
 * DashboardBrowserTest).
 */
class DashboardRoutesTest {
  @Test
  void servesThePageAndItsAssetsAndNothingElse() throws Exception {
    try (TestRouter router = TestRouter.start()) {
      servesThePageAtEachAddress(router);
      servesEveryAssetThePageLoads(router);
      servesNothingElse(router);
    }
  }

  private static void servesThePageAtEachAddress(TestRouter router) throws Exception {
    for (String path : List.of("/dashboard", "/dashboard/", "/dashboard/index.html")) {
      HttpResponse<String> page = router.managementGet(path);
      assertThat(page.statusCode()).as(path).isEqualTo(200);
      assertThat(page.headers().firstValue("Content-Type")).as(path).hasValue("text/html; charset=UTF-8");
      assertThat(page.headers().firstValue("Cache-Control")).as(path).hasValue("no-cache");
      assertThat(page.body()).as(path).isEqualTo(resource("index.html"));
    }
  }

  private static void servesEveryAssetThePageLoads(TestRouter router) throws Exception {
    Matcher assets = Pattern.compile("(?:src|href)=\"(/dashboard/[^\"]+)\"").matcher(resource("index.html"));
    List<String> loaded = assets.results().map(m -> m.group(1)).toList();
    assertThat(loaded).containsExactlyInAnyOrder("/dashboard/dashboard.js", "/dashboard/dashboard.css");
    for (String path : loaded) {
      HttpResponse<String> asset = router.managementGet(path);
      assertThat(asset.statusCode()).as(path).isEqualTo(200);
      assertThat(asset.body()).as(path).isEqualTo(resource(path.substring("/dashboard/".length())));
    }
    assertThat(router.managementGet("/dashboard/dashboard.js").headers().firstValue("Content-Type"))
        .hasValue("application/javascript; charset=UTF-8");
    assertThat(router.managementGet("/dashboard/dashboard.css").headers().firstValue("Content-Type"))
        .hasValue("text/css; charset=UTF-8");
  }

  private static void servesNothingElse(TestRouter router) throws Exception {
    for (String path : List.of("/dashboard/application.conf", "/dashboard/../application.conf",
        "/dashboard/%2e%2e/application.conf", "/dashboard/..%2Fapplication.conf", "/dashboard/dashboard/index.html",
        "/dashboard/dashboard.js/", "/dashboard/io/kvrouter/server/Main.class", "/dashboardx")) {
      HttpResponse<String> answer = router.managementGet(path);
      assertThat(answer.statusCode()).as(path).isEqualTo(404);
      assertThat(answer.body()).as(path).doesNotContain("kvrouter", "pekko");
    }
  }

  private static String resource(String name) throws IOException {
    try (InputStream in = DashboardRoutes.class.getClassLoader().getResourceAsStream("dashboard/" + name)) {
      assertThat(in).as(name).isNotNull();
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }
}
