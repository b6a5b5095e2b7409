export function First() {
  return <p>first</p>;
}

export class Good extends React.Component {
  render() {
    return <First />;
  }
}

export function Broken( {
  return <div>;
}
