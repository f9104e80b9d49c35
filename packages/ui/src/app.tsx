import type { JSX } from 'preact';
import { Page } from './components.tsx';
import { Layout } from './layout.tsx';
import { Link, match, useLocation } from './router.tsx';
import { nav, routes } from './routes.tsx';

export function App(): JSX.Element {
  const { path } = useLocation();
  for (const route of routes) {
    const params = match(route.pattern, path);
    if (params) return <Layout nav={nav}>{route.view(params)}</Layout>;
  }
  return (
    <Layout nav={nav}>
      <Page title="Not found">
        <p>
          The console has no page at <code>{path}</code>. <Link href="/ui/">Home</Link>
        </p>
      </Page>
    </Layout>
  );
}
