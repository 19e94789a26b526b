# Helpers the TAP tests share.
package InventoryTest;

use strict;
use warnings;
use Exporter 'import';
use Time::HiRes qw(usleep time);

our @EXPORT_OK = qw(wait_until);

# wait_until(SECONDS, CODE): polls CODE every 50 ms until it returns true or
# SECONDS have passed; returns its last answer.
sub wait_until
{
	my ($seconds, $cond) = @_;
	my $end = time + $seconds;
	while (time < $end)
	{
		return 1 if $cond->();
		usleep(50_000);
	}
	return $cond->();
}

1;
