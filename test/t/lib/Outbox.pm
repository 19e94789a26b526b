# A consumer of inventory.ledger's change stream, written as a service
# downstream (an order or a warehouse service) would write one: it reads
# the stream of wal2json (format 2) or of pgoutput, transaction by
# transaction, and rebuilds every movement by its key (order_id,
# batch_id), telling movements from housekeeping and restored history by
# the extension's markers (logical messages with the prefix "inventory").
#
#   my @txns = Outbox::wal2json_transactions($text);     # or
#   my @txns = Outbox::pgoutput_transactions(@hex_messages);
#   my $c = Outbox->new;
#   $c->apply($_) for @txns;
#   $c->{rows}{"$order_id\0$batch_id"}      # the movement as it stands
#   $c->stock                               # sku => {on_hand, reserved, sold}
#
# The stream is at least once: after a consumer restarts, what it had
# received but not confirmed comes again.  A change is applied once per
# key: each key remembers the commit LSN of the last transaction that
# changed it, and a transaction whose commit LSN is not past it is a
# repeat for that key.  A transaction cut off by a disconnection (begun,
# never committed in the stream) comes again whole and is dropped.
package Outbox;

use strict;
use warnings;
use JSON::PP;

my $json = JSON::PP->new;

# "0/16A66D8" -> a number that orders as the LSN does
sub lsn
{
	my ($text) = @_;
	my ($hi, $lo) = split m{/}, $text;
	return hex($hi) * 2**32 + hex($lo);
}

# wal2json_transactions(TEXT): the transactions of wal2json's format 2
# output (one JSON object a line, with include-xids and include-lsn), in
# the order of the stream, repeats included: each
# {xid, lsn (the commit's), events => [{type => 'change', op, table, row},
# {type => 'message', prefix, content}, ...]}.  A transaction without its
# commit line (the stream was cut) is left out; $$cut counts them.
sub wal2json_transactions
{
	my ($text, $cut) = @_;
	my (@txns, $open);
	for my $line (split /\n/, $text)
	{
		next if $line eq '';
		my $m = $json->decode($line);
		my $a = $m->{action};
		if ($a eq 'B')
		{
			$$cut++ if $open && $cut;
			$open = { xid => $m->{xid}, lsn => lsn($m->{lsn}), events => [] };
		}
		elsif ($a eq 'C')
		{
			die "commit without begin: $line" unless $open && $open->{xid} == $m->{xid};
			push @txns, $open;
			undef $open;
		}
		elsif ($a eq 'M')
		{
			# a message outside a transaction is not transactional: none here
			die "non-transactional message: $line" unless $open;
			push @{ $open->{events} },
			  { type => 'message', prefix => $m->{prefix}, content => $m->{content} };
		}
		elsif ($a =~ /^[IUD]$/)
		{
			my %row = map { $_->{name} => $_->{value} } @{ $m->{columns} // $m->{identity} };
			push @{ $open->{events} }, { type => 'change', op => $a,
				table => "$m->{schema}.$m->{table}", row => \%row };
		}
		elsif ($a eq 'T')
		{
			push @{ $open->{events} }, { type => 'truncate' };
		}
	}
	$$cut++ if $open && $cut;
	return @txns;
}

# pgoutput_transactions(HEX...): the same from pgoutput's messages
# (protocol version 1, messages 'true'), each given in hex, as
# pg_logical_slot_get_binary_changes() returns them.  Values arrive as
# text: booleans 't' and 'f' are made true and false, numbers stay text.
sub pgoutput_transactions
{
	my (@hex) = @_;
	my (%rel, @txns, $open);
	for my $h (@hex)
	{
		my $buf = pack('H*', $h);
		my $pos = 0;
		my $take = sub {
			my ($fmt, $len) = @_;
			my $v = unpack($fmt, substr($buf, $pos, $len));
			$pos += $len;
			return $v;
		};
		my $string = sub {
			my $end = index($buf, "\0", $pos);
			my $s = substr($buf, $pos, $end - $pos);
			$pos = $end + 1;
			return $s;
		};
		my $tuple = sub {
			my ($relid) = @_;
			my $n = $take->('n', 2);
			my %row;
			for my $i (0 .. $n - 1)
			{
				my $kind = $take->('a', 1);
				my $name = $rel{$relid}{cols}[$i];
				if ($kind eq 'n') { $row{$name} = undef; }
				elsif ($kind eq 't')
				{
					my $len = $take->('N', 4);
					$row{$name} = $take->("a$len", $len);
					utf8::decode($row{$name});
					$row{$name} = $row{$name} eq 't' ? JSON::PP::true : JSON::PP::false
					  if $rel{$relid}{types}[$i] == 16;
				}
				else { die "unexpected tuple column kind $kind"; }
			}
			return \%row;
		};
		my $type = $take->('a', 1);
		if ($type eq 'B')
		{
			my $final = $take->('Q>', 8);
			$take->('Q>', 8);
			$open = { xid => $take->('N', 4), lsn => $final, events => [] };
		}
		elsif ($type eq 'C')
		{
			$take->('C', 1);
			my $commit = $take->('Q>', 8);
			die "commit LSN differs from begin's" unless $commit == $open->{lsn};
			push @txns, $open;
			undef $open;
		}
		elsif ($type eq 'R')
		{
			my $relid = $take->('N', 4);
			my $name = $string->() . '.' . $string->();
			$take->('C', 1);
			my $n = $take->('n', 2);
			my (@cols, @types);
			for (1 .. $n)
			{
				$take->('C', 1);
				push @cols, $string->();
				push @types, $take->('N', 4);
				$take->('N', 4);
			}
			$rel{$relid} = { name => $name, cols => \@cols, types => \@types };
		}
		elsif ($type eq 'I' || $type eq 'U' || $type eq 'D')
		{
			my $relid = $take->('N', 4);
			my $row;
			while ($pos < length $buf)
			{
				my $which = $take->('a', 1);
				$row = $tuple->($relid);    # the new tuple comes last
			}
			push @{ $open->{events} }, { type => 'change', op => $type,
				table => $rel{$relid}{name}, row => $row };
		}
		elsif ($type eq 'M')
		{
			my $flags = $take->('C', 1);
			$take->('Q>', 8);
			my $prefix = $string->();
			my $len = $take->('N', 4);
			my $content = $take->("a$len", $len);
			die 'non-transactional message' unless $flags & 1;
			push @{ $open->{events} }, { type => 'message', prefix => $prefix, content => $content };
		}
		elsif ($type eq 'Y' || $type eq 'O' || $type eq 'T')
		{
			# types, origins, truncates: not for this consumer
		}
		else
		{
			die "unknown pgoutput message $type";
		}
	}
	return @txns;
}

sub new
{
	my ($class) = @_;
	return bless {
		rows      => {},    # key => the movement as it stands
		row_lsn   => {},    # key => commit LSN of its last change
		row_xid   => {},    # key => xid of its last change
		history   => {},    # key => 1 if it came in a restore
		movements => [],    # [op, key, state]: business, in stream order
		repeats   => 0,     # changes skipped as already applied
		repeated_txns => 0, # transactions that came again
		folds     => [],    # {rows, skus, seen_rows, seen_skus} per fold
		restores  => [],    # {table, rows, seen} per restore
		other     => [],    # messages with another prefix
		anomalies => [],    # what a consumer could not make sense of
	}, $class;
}

sub key
{
	my ($row) = @_;
	return "$row->{order_id}\0$row->{batch_id}";
}

# apply(TXN): one transaction of the stream, in order.
sub apply
{
	my ($self, $txn) = @_;
	my ($bracket, %touched, $skipped);
	my ($folds, $restores) = (scalar @{ $self->{folds} }, scalar @{ $self->{restores} });
	for my $e (@{ $txn->{events} })
	{
		if ($e->{type} eq 'message')
		{
			if ($e->{prefix} ne 'inventory')
			{
				push @{ $self->{other} }, $e->{content};
				next;
			}
			my $m = $json->decode($e->{content});
			if ($m->{phase} eq 'begin')
			{
				$self->anomaly("$m->{event} begins inside a bracket") if $bracket;
				$bracket = { %$m, seen_rows => 0, seen_skus => 0 };
			}
			else
			{
				$self->anomaly("$m->{event} ends outside its bracket")
				  unless $bracket && $bracket->{event} eq $m->{event};
				$self->close_bracket($bracket, $m);
				undef $bracket;
			}
			next;
		}
		next unless $e->{type} eq 'change';
		if ($e->{table} eq 'inventory.sku')
		{
			# the base counters: housekeeping of a fold or restored history;
			# a SKU's stock is what its movements add up to
			$bracket->{seen_skus}++ if $bracket;
			next;
		}
		next unless $e->{table} eq 'inventory.ledger';
		my $row = $e->{row};
		my $k = key($row);
		if (!$touched{$k} && ($self->{row_lsn}{$k} // -1) >= $txn->{lsn})
		{
			$self->{repeats}++;
			$skipped++;
			next;
		}
		$touched{$k} = 1;
		my $before = $self->{rows}{$k};
		if ($bracket && $bracket->{event} eq 'fold')
		{
			# a fold marks a settled movement folded and changes nothing else
			$self->anomaly("fold of $k: $e->{op}") unless $e->{op} eq 'U';
			$self->anomaly("fold of $k changed it")
			  unless $before && ($before->{state} // '') eq ($row->{state} // '') && $row->{folded};
			$bracket->{seen_rows}++;
		}
		elsif ($bracket && $bracket->{event} eq 'restore')
		{
			$self->anomaly("restore of $k: $e->{op}") unless $e->{op} eq 'I';
			$self->{history}{$k} = 1;
			$bracket->{seen_rows}++;
		}
		else
		{
			$self->anomaly("$k folded outside a fold") if $row->{folded};
			$self->anomaly("$k inserted twice") if $e->{op} eq 'I' && $before;
			$self->anomaly("$k updated before its insert") if $e->{op} eq 'U' && !$before;
			push @{ $self->{movements} }, [ $e->{op}, $k, $row->{state} ];
		}
		$self->{rows}{$k} = $row;
		$self->{row_lsn}{$k} = $txn->{lsn};
		$self->{row_xid}{$k} = $txn->{xid};
	}
	$self->anomaly("$bracket->{event} never ends") if $bracket;
	if ($skipped)
	{
		# a transaction applied before, come again: all of it, or the
		# stream is not in commit order
		$self->anomaly("transaction $txn->{xid} came again in part") if %touched;
		$self->{repeated_txns}++;
		splice @{ $self->{folds} }, $folds;
		splice @{ $self->{restores} }, $restores;
	}
	return;
}

sub close_bracket
{
	my ($self, $bracket, $end) = @_;
	if ($bracket->{event} eq 'fold')
	{
		push @{ $self->{folds} }, { rows => $end->{rows}, skus => $end->{skus},
			seen_rows => $bracket->{seen_rows}, seen_skus => $bracket->{seen_skus} };
	}
	else
	{
		push @{ $self->{restores} }, { table => $end->{table}, rows => $end->{rows},
			seen => $end->{table} eq 'inventory.ledger' ? $bracket->{seen_rows} : $bracket->{seen_skus} };
	}
	return;
}

sub anomaly
{
	my ($self, $what) = @_;
	push @{ $self->{anomalies} }, $what;
	return;
}

# stock(): sku => {on_hand, reserved, sold} from the movements as they
# stand: a restock or a stocktake adds qty to on_hand, a withdrawal and a
# confirmed reservation take it off, a PENDING reservation holds it.
sub stock
{
	my ($self) = @_;
	my %s;
	for my $r (values %{ $self->{rows} })
	{
		my $t = $s{ $r->{sku} } //= { on_hand => 0, reserved => 0, sold => 0 };
		my $state = $r->{state} // '';
		if ($r->{kind} eq 'restock' || $r->{kind} eq 'adjust') { $t->{on_hand} += $r->{qty}; }
		elsif ($r->{kind} eq 'withdraw') { $t->{on_hand} -= $r->{qty}; }
		elsif ($state eq 'PENDING') { $t->{reserved} += $r->{qty}; }
		elsif ($state eq 'CONFIRMED')
		{
			$t->{on_hand} -= $r->{qty};
			$t->{sold} += $r->{qty};
		}
	}
	return \%s;
}

1;
