import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.eclipse.jetty.server.AbstractNetworkConnector;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import software.amazon.dynamodb.services.local.main.CommandLineInput;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

/**
 * DynamoDB Local bound to one address (loopback by default) and never sending telemetry.
 *
 * <p>DynamoDB Local's own main (ServerRunner) builds its Jetty server with {@code new Server(port)}, which listens
 * on every interface, and has no option to choose the address. This launcher builds the server exactly as that
 * main does (the same command-line options), then, before it starts, sets the host of each of its Jetty
 * connectors. Run as a single-file source program (Java 11+, no javac):
 *
 * <pre>java -Dkeyhaven.bindHost=127.0.0.1 -Djava.library.path=…/DynamoDBLocal_lib -cp …/DynamoDBLocal.jar Launcher.java -port 8000 …</pre>
 *
 * <p>Fails closed: if the server's shape is not the one expected (another DynamoDB Local version), it exits
 * with an error rather than listen on every interface.
 */
public class Launcher {
  public static void main(String[] arguments) throws Exception {
    String host = System.getProperty("keyhaven.bindHost", "127.0.0.1");
    List<String> args = new ArrayList<>(Arrays.asList(arguments));
    // Telemetry is off whatever the caller passed: nothing leaves this machine.
    if (!args.contains("-disableTelemetry")) args.add("-disableTelemetry");
    // CORS: none by default (no origin is granted); a list naming "*" would let any web page in a browser on
    // this machine drive the database.
    int cors = args.indexOf("-cors");
    if (cors >= 0 && (cors + 1 >= args.size() || args.get(cors + 1).contains("*"))) fail("-cors must list origins, never *");
    String[] options = args.toArray(new String[0]);

    CommandLineInput input = new CommandLineInput(options);
    if (!input.init()) return; // -help or -version: printed, nothing to run
    if (!input.isDisableTelemetry()) fail("telemetry could not be disabled");

    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(options);
    Server jetty;
    try {
      Field server = DynamoDBProxyServer.class.getDeclaredField("server");
      server.setAccessible(true);
      jetty = (Server) server.get(proxy);
    } catch (ReflectiveOperationException | ClassCastException error) {
      fail("this DynamoDB Local has no Jetty server field to bind (" + error + ")");
      return;
    }
    Connector[] connectors = jetty.getConnectors();
    if (connectors.length == 0) fail("DynamoDB Local's server has no connector to bind");
    for (Connector connector : connectors) {
      if (!(connector instanceof AbstractNetworkConnector network)) {
        fail("DynamoDB Local's connector " + connector + " cannot be bound to " + host);
        return;
      }
      network.setHost(host);
    }
    // ServerRunner.main configures telemetry here; it is never configured, so nothing is ever sent.
    proxy.start();
    if (!jetty.isStarted()) fail("DynamoDB Local did not start on " + host + ":" + input.getPort());
    for (Connector connector : jetty.getConnectors()) {
      String bound = ((AbstractNetworkConnector) connector).getHost();
      if (!host.equals(bound)) fail("DynamoDB Local listens on " + bound + ", not " + host);
    }
    System.out.println("DynamoDB Local listening on " + host + ":" + input.getPort() + " (telemetry disabled)");
  }

  private static void fail(String message) {
    System.err.println("keyhaven DynamoDB Local launcher: " + message);
    System.exit(2);
  }
}
